#!/usr/bin/env bash
# For a machine with an NVIDIA GPU: builds the agent's CUDA benchmarks
# (src/gpu/cuda/cuda_bench.cu, with the suite's sizes and timings, through
# bench/gpu_check.cpp: nvcc alone, so it needs none of the agent's other
# libraries), runs the compute and memory benchmarks on GPU DEVICE, and prints
# each figure against the model's spec peak, against the expected figure
# (spec × efficiency, DESIGN §4) and, for the tensor GEMMs, against a plain
# cublasGemmEx of the same size. Then, when the agent's own dependencies are
# installed, the same through `gpunex-agent bench --only compute,memory`.
# Stays under 5 minutes. Usage: bench/gpu-check.sh [DEVICE]
# Then the benchmark challenges (issue 21, bench/challenge_check.cpp) and their
# overhead as a share of a benchmark run (target < 5%).
# Without a GPU it says it skips, and why, and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
DEV=${1:-0}
if ! command -v nvidia-smi >/dev/null; then
  echo "SKIP gpu-check: no nvidia-smi on this machine (no NVIDIA driver, so no GPU to measure)"
  exit 0
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP gpu-check: nvidia-smi lists no GPU ($(nvidia-smi -L 2>&1 | head -1))"
  exit 0
fi
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "SKIP gpu-check: nvcc not found: install the CUDA toolkit"; exit 0; }
OUT=${GPU_CHECK_OUT:-build-gpu-check}
mkdir -p "$OUT"

echo "== build ($("$NVCC" --version | tail -1))"
ARCH=(-arch=native)
"$NVCC" -std=c++17 -O2 "${ARCH[@]}" -Isrc -o "$OUT/gpu_check" bench/gpu_check.cpp src/gpu/cuda/cuda_bench.cu \
  -lcublasLt -lcublas 2>"$OUT/nvcc.log" || {
  ARCH=(-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_89,code=sm_89 -gencode=arch=compute_90,code=sm_90
    -gencode=arch=compute_90,code=compute_90)
  "$NVCC" -std=c++17 -O2 "${ARCH[@]}" -Isrc -o "$OUT/gpu_check" bench/gpu_check.cpp src/gpu/cuda/cuda_bench.cu \
    -lcublasLt -lcublas
}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,temperature.gpu,power.limit --format=csv,noheader -i "$DEV" || true

echo "== run (device $DEV)"
timeout 200 "$OUT/gpu_check" "$DEV" | tee "$OUT/gpu_check.txt"

NAME=$(sed -n 's/^name //p' "$OUT/gpu_check.txt")
# The catalog row whose NVML name is this GPU's (data/gpu-catalog.tsv).
ROW=$(awk -F'\t' -v n="$NAME" '!/^#/ && $3 == n' data/gpu-catalog.tsv | head -1)
echo
echo "== $NAME: measured against the spec, the expected figure and plain cuBLAS"
if [ -z "$ROW" ]; then
  echo "(not in data/gpu-catalog.tsv: no spec to compare with)"
fi
awk -F'\t' -v row="$ROW" '
  BEGIN {
    split(row, c, "\t")
    # columns: id name nvml vram mem_bw fp32 fp16 fp16_tensor bf16_tensor fp8_tensor tdp pcie_gen cc
    spec["compute.fp32"] = c[6]; eff["compute.fp32"] = 0.90
    spec["compute.fp16"] = c[7]; eff["compute.fp16"] = 0.90
    spec["compute.fp16_tensor"] = c[8]; eff["compute.fp16_tensor"] = 0.80
    spec["compute.bf16_tensor"] = c[9]; eff["compute.bf16_tensor"] = 0.80
    spec["compute.fp8_tensor"] = c[10]; eff["compute.fp8_tensor"] = 0.80
    spec["memory.read"] = spec["memory.write"] = spec["memory.copy"] = c[5]
    eff["memory.read"] = eff["memory.write"] = eff["memory.copy"] = 0.88
    lane[3] = 0.985; lane[4] = 1.969; lane[5] = 3.938; lane[6] = 7.877
    spec["host_link.h2d"] = spec["host_link.d2h"] = (c[12] in lane) ? lane[c[12]] * 16 : ""
    eff["host_link.h2d"] = eff["host_link.d2h"] = 0.80
    printf "%-20s %10s %10s %8s %10s %8s %10s %8s\n", "metric", "measured", "spec", "/spec", "expected", "/exp", "cuBLAS", "/cuBLAS"
  }
  NR == FNR { if (/^plain\./) { sub(/^plain\./, "compute.", $0); split($0, p, " "); plain[p[1]] = p[2] }; next }
  /^(compute|memory|host_link)\./ {
    split($0, f, " "); k = f[1]; m = f[2]
    if (m == "ERROR") { printf "%-20s %s\n", k, substr($0, length(k) + 2); next }
    s = spec[k]; e = (s != "" && s != "NA") ? s * eff[k] : ""
    printf "%-20s %10.1f %10s %8s %10s %8s %10s %8s\n", k, m,
      (s != "" && s != "NA") ? s : "-", (e != "") ? sprintf("%.3f", m / s) : "-",
      (e != "") ? sprintf("%.1f", e) : "-", (e != "") ? sprintf("%.3f", m / e) : "-",
      (k in plain && plain[k] != "ERROR") ? plain[k] : "-",
      (k in plain && plain[k] + 0 > 0) ? sprintf("%.3f", m / plain[k]) : "-"
  }
' FS=' ' "$OUT/gpu_check.txt" "$OUT/gpu_check.txt"
echo "(TFLOP/s for compute, GB/s for memory and host link; expected = spec x efficiency: tensor 0.80, FMA 0.90, memory 0.88, host link 0.80 of PCIe x16)"

# The challenges: the CUDA part by nvcc, the rest (core/challenge.cpp is C++20) by the host compiler.
echo
echo "== benchmark challenges (device $DEV)"
"$NVCC" -std=c++17 -O2 "${ARCH[@]}" -Isrc -c -o "$OUT/cuda_bench.o" src/gpu/cuda/cuda_bench.cu
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
c++ -std=c++20 -O2 -Isrc -I"$CUDA_HOME/include" -o "$OUT/challenge_check" bench/challenge_check.cpp \
  src/core/challenge.cpp "$OUT/cuda_bench.o" -L"$CUDA_HOME/lib64" -lcublasLt -lcublas -lcudart -lpthread
timeout 200 "$OUT/challenge_check" "$DEV" | tee "$OUT/challenge_check.txt" || echo "(challenges FAILED, see above)"

# The agent itself, when its libraries are installed and there is time left (a 5-minute budget).
if [ $((SECONDS - START)) -lt 120 ] && cmake -S . -B "$OUT/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUNEX_TESTS=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=native >"$OUT/cmake.log" 2>&1; then
  echo
  echo "== gpunex-agent bench --only compute,memory"
  if timeout $((280 - (SECONDS - START))) ninja -C "$OUT/cmake" -j"$(nproc)" gpunex-agent >"$OUT/ninja.log" 2>&1; then
    timeout $((290 - (SECONDS - START))) "$OUT/cmake/bin/gpunex-agent" bench --only compute,memory --data-dir "$OUT" || true
  else
    echo "(agent build did not finish in time: see $OUT/ninja.log)"
  fi
else
  echo "(gpunex-agent not built: its libraries are missing here or time is short; see $OUT/cmake.log)"
fi
echo "== done in $((SECONDS - START)) s"

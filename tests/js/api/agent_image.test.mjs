// The shipped agent measures real GPUs (issue #14): `gpunex-agent --version` says whether the
// binary was built with CUDA and which version, and the agent image is built by a CUDA devel
// stage that refuses to produce an agent without CUDA, run on the CUDA runtime with cuBLAS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BIN, ROOT } from '../lib/server.mjs';

// The CUDA compiler this build used, from its CMake cache; null when it was built without.
function buildCudaCompiler() {
  const cache = path.join(BIN, '..', 'CMakeCache.txt');
  if (!existsSync(cache)) return null;
  const text = readFileSync(cache, 'utf8');
  if (!/^GPUNEX_BUILT_WITH_CUDA:INTERNAL=ON$/m.test(text)) return null;
  return text.match(/^GPUNEX_CUDA_NVCC:INTERNAL=(.+)$/m)[1].trim();
}

test('gpunex-agent --version says whether it measures real GPUs, and with which CUDA', () => {
  const out = execFileSync(path.join(BIN, 'gpunex-agent'), ['--version'], { encoding: 'utf8' });
  assert.match(out, /^gpunex-agent \d+\.\d+\.\d+\n/);
  const nvcc = buildCudaCompiler();
  if (nvcc) {
    const release = execFileSync(nvcc, ['--version'], { encoding: 'utf8' }).match(/release (\d+\.\d+)/)[1];
    assert.match(out, new RegExp(`^GPU benchmarks: built with CUDA ${release.replace('.', '\\.')}\\.\\d+ \\(cuBLAS`, 'm'), out);
    assert.match(out, /architectures [^)]*90/, out);
  } else {
    assert.match(out, /^GPU benchmarks: built without CUDA \(real GPUs cannot be measured/m, out);
  }
});

test('the agent image builds with nvcc and refuses an agent without CUDA', () => {
  const file = readFileSync(path.join(ROOT, 'deploy', 'agent', 'Dockerfile'), 'utf8');
  const froms = [...file.matchAll(/^FROM (\S+)(?: AS (\w+))?$/gm)].map((m) => ({ image: m[1], stage: m[2] }));
  assert.equal(froms.length, 2, JSON.stringify(froms));
  assert.match(froms[0].image, /^nvidia\/cuda:\$\{CUDA_VERSION\}-devel-/, 'the build stage has nvcc');
  assert.match(froms[1].image, /^nvidia\/cuda:\$\{CUDA_VERSION\}-runtime-/, 'the runtime has libcudart and cuBLAS');
  assert.match(file, /-DGPUNEX_WITH_CUDA=ON/);
  assert.match(file, /gpunex-agent --version \| grep -q '\^GPU benchmarks: built with CUDA '/);
  // The CUDA libraries come from the runtime image, matched to the build's CUDA, not copied over.
  assert.match(file, /libcu\(da\|dart\|blas\|blasLt\)/);
});

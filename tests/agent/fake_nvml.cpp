// A stand-in libnvidia-ml for tests: two GPUs with fixed answers, the second
// one "lost" when GPUNEX_FAKE_NVML_LOST=1. Exports the C symbols the NVML
// backend resolves with dlsym; built as a shared library.
#include <cstdlib>
#include <cstring>

namespace {
struct Dev {
  int index;
};
Dev g_devs[2] = {{0}, {1}};
using Ret = int;
constexpr Ret kOk = 0;
constexpr Ret kNotSupported = 3;
constexpr Ret kInvalid = 2;
constexpr Ret kLost = 15;
bool lost(void* d) {
  const char* v = std::getenv("GPUNEX_FAKE_NVML_LOST");
  return v != nullptr && std::strcmp(v, "1") == 0 && static_cast<Dev*>(d)->index == 1;
}
Ret copy(const char* s, char* out, unsigned len) {
  if (std::strlen(s) + 1 > len) return 7;  // insufficient size
  std::strcpy(out, s);
  return kOk;
}
}  // namespace

extern "C" {
struct FakeMemory {
  unsigned long long total, free, used;
};
struct FakeUtil {
  unsigned gpu, memory;
};
struct FakePci {
  char legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

Ret nvmlInit_v2() {
  return kOk;
}
Ret nvmlShutdown() {
  return kOk;
}
const char* nvmlErrorString(Ret r) {
  return r == kLost ? "GPU is lost" : r == kNotSupported ? "Not Supported" : "Unknown Error";
}
Ret nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 2;
  return kOk;
}
Ret nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  if (i > 1) return kInvalid;
  *d = &g_devs[i];
  return kOk;
}
Ret nvmlDeviceGetName(void* d, char* out, unsigned len) {
  return copy(static_cast<Dev*>(d)->index == 0 ? "NVIDIA H100 80GB HBM3" : "NVIDIA GeForce RTX 4090", out, len);
}
Ret nvmlDeviceGetUUID(void* d, char* out, unsigned len) {
  if (lost(d)) return kLost;
  return copy(static_cast<Dev*>(d)->index == 0 ? "GPU-11111111-2222-3333-4444-555555555555"
                                               : "GPU-66666666-7777-8888-9999-000000000000",
              out, len);
}
Ret nvmlDeviceGetSerial(void* d, char* out, unsigned len) {
  if (static_cast<Dev*>(d)->index == 1) return kNotSupported;  // GeForce: no serial
  return copy("1652922001234", out, len);
}
Ret nvmlDeviceGetMemoryInfo(void* d, FakeMemory* m) {
  if (lost(d)) return kLost;
  const unsigned long long mib = 1024ULL * 1024ULL;
  m->total = (static_cast<Dev*>(d)->index == 0 ? 81559 : 24564) * mib;
  m->used = 1234 * mib;
  m->free = m->total - m->used;
  return kOk;
}
Ret nvmlSystemGetDriverVersion(char* out, unsigned len) {
  return copy("550.54.15", out, len);
}
Ret nvmlSystemGetCudaDriverVersion_v2(int* v) {
  *v = 12040;
  return kOk;
}
Ret nvmlDeviceGetPciInfo_v3(void* d, FakePci* p) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->bus_id, static_cast<Dev*>(d)->index == 0 ? "00000000:17:00.0" : "00000000:65:00.0");
  return kOk;
}
Ret nvmlDeviceGetCurrPcieLinkGeneration(void*, unsigned* v) {
  *v = 4;
  return kOk;
}
Ret nvmlDeviceGetMaxPcieLinkGeneration(void*, unsigned* v) {
  *v = 5;
  return kOk;
}
Ret nvmlDeviceGetCurrPcieLinkWidth(void*, unsigned* v) {
  *v = 8;
  return kOk;
}
Ret nvmlDeviceGetMaxPcieLinkWidth(void*, unsigned* v) {
  *v = 16;
  return kOk;
}
Ret nvmlDeviceGetTemperature(void* d, int sensor, unsigned* v) {
  if (lost(d)) return kLost;
  if (sensor != 0) return kInvalid;
  *v = 71;
  return kOk;
}
Ret nvmlDeviceGetPowerUsage(void* d, unsigned* mw) {
  if (lost(d)) return kLost;
  *mw = 612345;
  return kOk;
}
Ret nvmlDeviceGetEnforcedPowerLimit(void*, unsigned* mw) {
  *mw = 700000;
  return kOk;
}
Ret nvmlDeviceGetUtilizationRates(void*, FakeUtil* u) {
  u->gpu = 97;
  u->memory = 55;
  return kOk;
}
Ret nvmlDeviceGetClockInfo(void*, int type, unsigned* v) {
  *v = type == 1 ? 1755 : type == 2 ? 2619 : 0;
  return kOk;
}
Ret nvmlDeviceGetCurrentClocksEventReasons(void*, unsigned long long* bits) {
  *bits = 0x4 | 0x20;  // sw power cap + sw thermal slowdown
  return kOk;
}
Ret nvmlDeviceGetTotalEccErrors(void* d, int type, int counter, unsigned long long* n) {
  if (static_cast<Dev*>(d)->index == 1) return kNotSupported;
  if (counter != 0) return kInvalid;
  *n = type == 0 ? 7 : 1;
  return kOk;
}
Ret nvmlDeviceGetCudaComputeCapability(void* d, int* major, int* minor) {
  *major = static_cast<Dev*>(d)->index == 0 ? 9 : 8;
  *minor = static_cast<Dev*>(d)->index == 0 ? 0 : 9;
  return kOk;
}
}

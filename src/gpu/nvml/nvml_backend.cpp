#include "gpu/nvml/nvml_backend.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <vector>

#include "gpu/nvml/nvml_api.hpp"
#include "util/clock.hpp"

namespace gpunex::gpu {
namespace {

using core::Error;
using core::ErrorCode;

//! Closes the dlopen handle when the backend goes away.
struct LibraryHandle {
  void* handle = nullptr;
  explicit LibraryHandle(void* h) : handle(h) {}
  ~LibraryHandle() {
    if (handle != nullptr) dlclose(handle);
  }
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;
};

//! The resolved entry points; optional ones stay null when the driver is too old.
struct Api {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DeviceGetCountFn get_count = nullptr;
  nvml::DeviceGetHandleByIndexFn get_handle = nullptr;
  nvml::DeviceGetStringFn get_name = nullptr;
  nvml::DeviceGetStringFn get_uuid = nullptr;
  nvml::DeviceGetStringFn get_serial = nullptr;
  nvml::DeviceGetMemoryInfoFn get_memory = nullptr;
  nvml::SystemGetDriverVersionFn get_driver_version = nullptr;
  nvml::SystemGetCudaDriverVersionFn get_cuda_version = nullptr;
  nvml::DeviceGetPciInfoFn get_pci = nullptr;
  nvml::DeviceGetUintFn pcie_gen_current = nullptr;
  nvml::DeviceGetUintFn pcie_gen_max = nullptr;
  nvml::DeviceGetUintFn pcie_width_current = nullptr;
  nvml::DeviceGetUintFn pcie_width_max = nullptr;
  nvml::DeviceGetTemperatureFn get_temperature = nullptr;
  nvml::DeviceGetUintFn get_power_usage = nullptr;
  nvml::DeviceGetUintFn get_power_limit = nullptr;
  nvml::DeviceGetUtilizationRatesFn get_utilization = nullptr;
  nvml::DeviceGetClockInfoFn get_clock = nullptr;
  nvml::DeviceGetReasonsFn get_clock_events = nullptr;  // EventReasons, or ThrottleReasons on old drivers
  nvml::DeviceGetTotalEccErrorsFn get_ecc = nullptr;
  nvml::DeviceGetCudaComputeCapabilityFn get_cc = nullptr;
};

template <class Fn>
void resolve(void* lib, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(lib, name));
}

class NvmlBackend final : public GpuBackend {
 public:
  NvmlBackend(std::unique_ptr<LibraryHandle> lib, Api api) : lib_(std::move(lib)), api_(api) {}
  ~NvmlBackend() override {
    if (api_.shutdown != nullptr) api_.shutdown();
  }

  std::string error_text(const char* fn, nvml::Return rc) const {
    const char* s = api_.error_string != nullptr ? api_.error_string(rc) : nullptr;
    return std::string(fn) + " failed: " + (s != nullptr ? s : "NVML error " + std::to_string(rc));
  }
  Error error(const char* fn, nvml::Return rc) const {
    return Error::make(rc == nvml::kErrorGpuIsLost ? ErrorCode::unavailable : ErrorCode::internal, error_text(fn, rc));
  }

  core::Result<nvml::Device> handle(unsigned index) {
    nvml::Device dev = nullptr;
    if (nvml::Return rc = api_.get_handle(index, &dev); rc != nvml::kSuccess) {
      return error("nvmlDeviceGetHandleByIndex_v2", rc);
    }
    return dev;
  }

  core::Result<std::vector<protocol::GpuInfo>> list_gpus() override {
    unsigned count = 0;
    if (nvml::Return rc = api_.get_count(&count); rc != nvml::kSuccess) return error("nvmlDeviceGetCount_v2", rc);

    char driver[nvml::kDriverVersionBufferSize] = {};
    if (nvml::Return rc = api_.get_driver_version(driver, sizeof driver); rc != nvml::kSuccess) {
      return error("nvmlSystemGetDriverVersion", rc);
    }
    driver_version_ = driver;
    std::string cuda;
    if (api_.get_cuda_version != nullptr) {
      int v = 0;
      if (nvml::Return rc = api_.get_cuda_version(&v); rc != nvml::kSuccess) {
        return error("nvmlSystemGetCudaDriverVersion_v2", rc);
      }
      cuda = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    }

    std::vector<protocol::GpuInfo> out;
    for (unsigned i = 0; i < count; ++i) {
      auto g = read_gpu(i, cuda);
      if (!g) return std::move(g).error();
      out.push_back(std::move(*g));
    }
    return out;
  }

  core::Result<GpuSample> sample(unsigned index) override {
    auto dev = handle(index);
    if (!dev) return std::move(dev).error();
    GpuSample s;
    s.index = index;
    s.at_ms = util::system_now_ms();
    char uuid[nvml::kUuidBufferSize] = {};
    if (nvml::Return rc = api_.get_uuid(*dev, uuid, sizeof uuid); rc != nvml::kSuccess) {
      return error("nvmlDeviceGetUUID", rc);
    }
    s.uuid = uuid;
    nvml::Memory mem{};
    if (nvml::Return rc = api_.get_memory(*dev, &mem); rc != nvml::kSuccess) {
      return error("nvmlDeviceGetMemoryInfo", rc);
    }
    s.memory_used_mib = static_cast<std::int64_t>(mem.used / (1024ULL * 1024ULL));

    // Optional readings: "not supported" leaves the field empty; any other error fails the sample,
    // because a GPU that stops answering (fell off the bus) must be reported, not hidden.
    auto check = [&](nvml::Return rc, const char* fn) -> core::Status {
      if (rc == nvml::kSuccess || rc == nvml::kErrorNotSupported) return core::ok_status();
      return error(fn, rc);
    };
    unsigned v = 0;
    nvml::Return rc = api_.get_temperature(*dev, nvml::kTemperatureGpu, &v);
    if (auto st = check(rc, "nvmlDeviceGetTemperature"); !st) return std::move(st).error();
    if (rc == nvml::kSuccess) s.temperature_c = v;
    rc = api_.get_power_usage(*dev, &v);
    if (auto st = check(rc, "nvmlDeviceGetPowerUsage"); !st) return std::move(st).error();
    if (rc == nvml::kSuccess) s.power_w = v / 1000.0;
    if (api_.get_power_limit != nullptr && api_.get_power_limit(*dev, &v) == nvml::kSuccess)
      s.power_limit_w = v / 1000.0;
    nvml::Utilization util{};
    rc = api_.get_utilization(*dev, &util);
    if (auto st = check(rc, "nvmlDeviceGetUtilizationRates"); !st) return std::move(st).error();
    if (rc == nvml::kSuccess) {
      s.util_gpu_pct = util.gpu;
      s.util_mem_pct = util.memory;
    }
    rc = api_.get_clock(*dev, nvml::kClockSm, &v);
    if (auto st = check(rc, "nvmlDeviceGetClockInfo(SM)"); !st) return std::move(st).error();
    if (rc == nvml::kSuccess) s.sm_clock_mhz = v;
    rc = api_.get_clock(*dev, nvml::kClockMem, &v);
    if (auto st = check(rc, "nvmlDeviceGetClockInfo(MEM)"); !st) return std::move(st).error();
    if (rc == nvml::kSuccess) s.mem_clock_mhz = v;
    if (api_.get_clock_events != nullptr) {
      unsigned long long bits = 0;
      rc = api_.get_clock_events(*dev, &bits);
      if (auto st = check(rc, "nvmlDeviceGetCurrentClocksEventReasons"); !st) return std::move(st).error();
      if (rc == nvml::kSuccess) {
        s.clock_event_bits = bits;
        s.clock_events = core::clock_event_names(bits);
      }
    }
    if (api_.get_ecc != nullptr) {
      unsigned long long n = 0;
      // ECC is off or absent on many boards (GeForce): NOT_SUPPORTED, left empty.
      if (api_.get_ecc(*dev, nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, &n) == nvml::kSuccess)
        s.ecc_corrected = static_cast<std::int64_t>(n);
      if (api_.get_ecc(*dev, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &n) == nvml::kSuccess) {
        s.ecc_uncorrected = static_cast<std::int64_t>(n);
      }
    }
    return s;
  }

  bool simulated() const override { return false; }
  std::string describe() const override {
    return "NVML" + (driver_version_.empty() ? std::string() : ", driver " + driver_version_);
  }

 private:
  //! One GPU's identity, memory and bus, then its link and limits (read_link).
  core::Result<protocol::GpuInfo> read_gpu(unsigned i, const std::string& cuda) {
    auto dev = handle(i);
    if (!dev) return std::move(dev).error();
    protocol::GpuInfo g;
    g.index = i;
    g.driver_version = driver_version_;
    g.cuda_version = cuda;
    char name[nvml::kNameBufferSize] = {};
    if (nvml::Return rc = api_.get_name(*dev, name, sizeof name); rc != nvml::kSuccess) {
      return error("nvmlDeviceGetName", rc);
    }
    g.name = name;
    char uuid[nvml::kUuidBufferSize] = {};
    if (nvml::Return rc = api_.get_uuid(*dev, uuid, sizeof uuid); rc != nvml::kSuccess) {
      return error("nvmlDeviceGetUUID", rc);
    }
    g.uuid = uuid;
    if (api_.get_serial != nullptr) {
      char serial[nvml::kSerialBufferSize] = {};
      nvml::Return rc = api_.get_serial(*dev, serial, sizeof serial);
      if (rc == nvml::kSuccess) {
        if (serial[0] != '\0') g.serial = serial;
      } else if (rc != nvml::kErrorNotSupported) {
        return error("nvmlDeviceGetSerial", rc);
      }
    }
    nvml::Memory mem{};
    if (nvml::Return rc = api_.get_memory(*dev, &mem); rc != nvml::kSuccess) {
      return error("nvmlDeviceGetMemoryInfo", rc);
    }
    g.memory_mib = static_cast<std::int64_t>(mem.total / (1024ULL * 1024ULL));
    nvml::PciInfo pci{};
    if (nvml::Return rc = api_.get_pci(*dev, &pci); rc != nvml::kSuccess) {
      return error("nvmlDeviceGetPciInfo_v3", rc);
    }
    g.pci_bus_id = pci.bus_id;
    if (auto st = read_link(*dev, g); !st) return std::move(st).error();
    return g;
  }

  //! PCIe link, power limit and compute capability. Not every board (some SXM, vGPU) supports
  //! them: one that is not supported is left 0 (or empty), not an error.
  core::Status read_link(nvml::Device dev, protocol::GpuInfo& g) {
    auto read_uint = [&](nvml::DeviceGetUintFn fn, const char* fn_name, unsigned& out) -> core::Status {
      if (fn == nullptr) return core::ok_status();
      unsigned v = 0;
      nvml::Return rc = fn(dev, &v);
      if (rc == nvml::kSuccess) {
        out = v;
      } else if (rc != nvml::kErrorNotSupported) {
        return error(fn_name, rc);
      }
      return core::ok_status();
    };
    unsigned gen_current = 0, gen_max = 0, width_current = 0, width_max = 0, limit_mw = 0;
    for (auto st : {read_uint(api_.pcie_gen_current, "nvmlDeviceGetCurrPcieLinkGeneration", gen_current),
                    read_uint(api_.pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration", gen_max),
                    read_uint(api_.pcie_width_current, "nvmlDeviceGetCurrPcieLinkWidth", width_current),
                    read_uint(api_.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth", width_max),
                    read_uint(api_.get_power_limit, "nvmlDeviceGetEnforcedPowerLimit", limit_mw)}) {
      if (!st) return st;
    }
    g.pcie_gen_current = gen_current;
    g.pcie_gen_max = gen_max;
    g.pcie_width_current = width_current;
    g.pcie_width_max = width_max;
    g.power_limit_w = limit_mw / 1000.0;
    if (api_.get_cc != nullptr) {
      int major = 0;
      int minor = 0;
      if (api_.get_cc(dev, &major, &minor) == nvml::kSuccess) {
        g.compute_capability = std::to_string(major) + "." + std::to_string(minor);
      }
    }
    return core::ok_status();
  }

  std::unique_ptr<LibraryHandle> lib_;
  Api api_;
  std::string driver_version_;
};

}  // namespace

core::Result<std::unique_ptr<GpuBackend>> open_nvml_backend(const std::string& library) {
  void* raw = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (raw == nullptr) {
    return Error::make(ErrorCode::unavailable,
                       "no NVIDIA driver found (" + library +
                           " not loadable): install the NVIDIA driver, or run with --simulate MODEL:COUNT")
        .with_code("no_nvidia_driver");
  }
  auto lib = std::make_unique<LibraryHandle>(raw);
  Api api;
  resolve(raw, "nvmlInit_v2", api.init);
  resolve(raw, "nvmlShutdown", api.shutdown);
  resolve(raw, "nvmlErrorString", api.error_string);
  resolve(raw, "nvmlDeviceGetCount_v2", api.get_count);
  resolve(raw, "nvmlDeviceGetHandleByIndex_v2", api.get_handle);
  resolve(raw, "nvmlDeviceGetName", api.get_name);
  resolve(raw, "nvmlDeviceGetUUID", api.get_uuid);
  resolve(raw, "nvmlDeviceGetSerial", api.get_serial);
  resolve(raw, "nvmlDeviceGetMemoryInfo", api.get_memory);
  resolve(raw, "nvmlSystemGetDriverVersion", api.get_driver_version);
  resolve(raw, "nvmlSystemGetCudaDriverVersion_v2", api.get_cuda_version);
  resolve(raw, "nvmlDeviceGetPciInfo_v3", api.get_pci);
  resolve(raw, "nvmlDeviceGetCurrPcieLinkGeneration", api.pcie_gen_current);
  resolve(raw, "nvmlDeviceGetMaxPcieLinkGeneration", api.pcie_gen_max);
  resolve(raw, "nvmlDeviceGetCurrPcieLinkWidth", api.pcie_width_current);
  resolve(raw, "nvmlDeviceGetMaxPcieLinkWidth", api.pcie_width_max);
  resolve(raw, "nvmlDeviceGetTemperature", api.get_temperature);
  resolve(raw, "nvmlDeviceGetPowerUsage", api.get_power_usage);
  resolve(raw, "nvmlDeviceGetEnforcedPowerLimit", api.get_power_limit);
  resolve(raw, "nvmlDeviceGetUtilizationRates", api.get_utilization);
  resolve(raw, "nvmlDeviceGetClockInfo", api.get_clock);
  resolve(raw, "nvmlDeviceGetCurrentClocksEventReasons", api.get_clock_events);
  if (api.get_clock_events == nullptr) resolve(raw, "nvmlDeviceGetCurrentClocksThrottleReasons", api.get_clock_events);
  resolve(raw, "nvmlDeviceGetTotalEccErrors", api.get_ecc);
  resolve(raw, "nvmlDeviceGetCudaComputeCapability", api.get_cc);

  // The entry points every supported driver has; without them the library is not a usable NVML.
  struct Required {
    const char* name;
    bool present;
  };
  const Required required[] = {
      {"nvmlInit_v2", api.init != nullptr},
      {"nvmlShutdown", api.shutdown != nullptr},
      {"nvmlDeviceGetCount_v2", api.get_count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", api.get_handle != nullptr},
      {"nvmlDeviceGetName", api.get_name != nullptr},
      {"nvmlDeviceGetUUID", api.get_uuid != nullptr},
      {"nvmlDeviceGetMemoryInfo", api.get_memory != nullptr},
      {"nvmlSystemGetDriverVersion", api.get_driver_version != nullptr},
      {"nvmlDeviceGetPciInfo_v3", api.get_pci != nullptr},
      {"nvmlDeviceGetTemperature", api.get_temperature != nullptr},
      {"nvmlDeviceGetPowerUsage", api.get_power_usage != nullptr},
      {"nvmlDeviceGetUtilizationRates", api.get_utilization != nullptr},
      {"nvmlDeviceGetClockInfo", api.get_clock != nullptr},
  };
  for (const Required& r : required) {
    if (!r.present) {
      return Error::make(
          ErrorCode::unavailable,
          library + " has no " + r.name + ": the NVIDIA driver is too old or damaged; install a current driver");
    }
  }
  if (nvml::Return rc = api.init(); rc != nvml::kSuccess) {
    const char* s = api.error_string != nullptr ? api.error_string(rc) : nullptr;
    return Error::make(ErrorCode::unavailable, std::string("nvmlInit_v2 failed: ") +
                                                   (s != nullptr ? s : "NVML error " + std::to_string(rc)) +
                                                   " (is the NVIDIA kernel driver loaded? check nvidia-smi)");
  }
  return std::unique_ptr<GpuBackend>(std::make_unique<NvmlBackend>(std::move(lib), api));
}

}  // namespace gpunex::gpu

#pragma once
// The slice of the NVML C API that GPUnex calls, declared here so the agent
// builds without nvml.h and has no link-time dependency on the driver. Values
// and layouts follow NVML's public header (nvml.h, CUDA 12.x).

#include <cstdint>

namespace gpunex::gpu::nvml {

using Return = int;                   // nvmlReturn_t
using Device = struct DeviceOpaque*;  // nvmlDevice_t

inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;

inline constexpr unsigned kNameBufferSize = 96;           // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kUuidBufferSize = 96;           // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kSerialBufferSize = 30;         // NVML_DEVICE_SERIAL_BUFFER_SIZE
inline constexpr unsigned kDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

inline constexpr int kTemperatureGpu = 0;          // NVML_TEMPERATURE_GPU
inline constexpr int kClockSm = 1;                 // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;                // NVML_CLOCK_MEM
inline constexpr int kMemoryErrorCorrected = 0;    // NVML_MEMORY_ERROR_TYPE_CORRECTED
inline constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
inline constexpr int kVolatileEcc = 0;             // NVML_VOLATILE_ECC (since the last driver load)

struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

struct PciInfo {  // nvmlPciInfo_t (the v3 call fills this layout)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};

//! Function pointer types, one per NVML entry point used.
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using DeviceGetCountFn = Return (*)(unsigned int*);
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);
using DeviceGetStringFn = Return (*)(Device, char*, unsigned int);  // GetName, GetUUID, GetSerial
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);
using SystemGetDriverVersionFn = Return (*)(char*, unsigned int);
using SystemGetCudaDriverVersionFn = Return (*)(int*);
using DeviceGetPciInfoFn = Return (*)(Device, PciInfo*);
using DeviceGetUintFn = Return (*)(Device, unsigned int*);  // PCIe gen/width, power usage/limit
using DeviceGetTemperatureFn = Return (*)(Device, int, unsigned int*);
using DeviceGetUtilizationRatesFn = Return (*)(Device, Utilization*);
using DeviceGetClockInfoFn = Return (*)(Device, int, unsigned int*);
using DeviceGetReasonsFn = Return (*)(Device, unsigned long long*);
using DeviceGetTotalEccErrorsFn = Return (*)(Device, int, int, unsigned long long*);
using DeviceGetCudaComputeCapabilityFn = Return (*)(Device, int*, int*);

}  // namespace gpunex::gpu::nvml

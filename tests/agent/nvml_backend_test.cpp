// The NVML backend against a stand-in libnvidia-ml (fake_nvml.cpp), loaded the same way as the real one.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gpu/nvml/nvml_backend.hpp"

#ifndef GPUNEX_FAKE_NVML_PATH
#error "GPUNEX_FAKE_NVML_PATH must name the stand-in library"
#endif

namespace gpunex::gpu {
namespace {

TEST(NvmlBackend, ReadsStaticFacts) {
  unsetenv("GPUNEX_FAKE_NVML_LOST");
  auto b = open_nvml_backend(GPUNEX_FAKE_NVML_PATH);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_FALSE((*b)->simulated());
  auto gpus = (*b)->list_gpus();
  ASSERT_TRUE(gpus) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 2u);
  const protocol::GpuInfo& h = (*gpus)[0];
  EXPECT_EQ(h.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(h.serial, "1652922001234");
  EXPECT_EQ(h.memory_mib, 81559u);
  EXPECT_EQ(h.driver_version, "550.54.15");
  EXPECT_EQ(h.cuda_version, "12.4");
  EXPECT_EQ(h.pci_bus_id, "00000000:17:00.0");
  EXPECT_EQ(h.pcie_gen_current, 4u);
  EXPECT_EQ(h.pcie_gen_max, 5u);
  EXPECT_EQ(h.pcie_width_current, 8u);
  EXPECT_EQ(h.pcie_width_max, 16u);
  EXPECT_DOUBLE_EQ(h.power_limit_w, 700.0);
  EXPECT_EQ(h.compute_capability, "9.0");
  EXPECT_FALSE((*gpus)[1].serial.has_value());  // not supported: absent, not an error
  EXPECT_EQ((*gpus)[1].compute_capability, "8.9");
  EXPECT_EQ((*b)->describe(), "NVML, driver 550.54.15");
}

TEST(NvmlBackend, SamplesTelemetry) {
  unsetenv("GPUNEX_FAKE_NVML_LOST");
  auto b = open_nvml_backend(GPUNEX_FAKE_NVML_PATH);
  ASSERT_TRUE(b);
  auto s = (*b)->sample(0);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->memory_used_mib, 1234u);
  EXPECT_EQ(s->temperature_c, 71u);
  EXPECT_DOUBLE_EQ(*s->power_w, 612.345);
  EXPECT_DOUBLE_EQ(*s->power_limit_w, 700.0);
  EXPECT_EQ(s->util_gpu_pct, 97u);
  EXPECT_EQ(s->util_mem_pct, 55u);
  EXPECT_EQ(s->sm_clock_mhz, 1755u);
  EXPECT_EQ(s->mem_clock_mhz, 2619u);
  EXPECT_EQ(s->clock_events, (std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown"}));
  EXPECT_EQ(s->ecc_corrected, 7u);
  EXPECT_EQ(s->ecc_uncorrected, 1u);
  auto g = (*b)->sample(1);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->ecc_corrected.has_value());  // GeForce: no ECC
}

TEST(NvmlBackend, ALostGpuNamesTheCallAndNvmlsMessage) {
  setenv("GPUNEX_FAKE_NVML_LOST", "1", 1);
  auto b = open_nvml_backend(GPUNEX_FAKE_NVML_PATH);
  ASSERT_TRUE(b);
  auto s = (*b)->sample(1);
  unsetenv("GPUNEX_FAKE_NVML_LOST");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "nvmlDeviceGetUUID failed: GPU is lost");
  EXPECT_EQ(s.error().code, core::ErrorCode::unavailable);
  auto bad = (*b)->sample(5);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "nvmlDeviceGetHandleByIndex_v2 failed: Unknown Error");
}

}  // namespace
}  // namespace gpunex::gpu

// The review queue's GPU column: each model with its own count (issue #14: 2× L4 + 1× L40S read
// as "3 × L4, L40S").
#include <gtest/gtest.h>

#include "core/declared_gpus.hpp"

using namespace gpunex::core;  // NOLINT

namespace {
GpuEntry entry(std::string model, std::int64_t count, std::string other = "") {
  GpuEntry g;
  g.model = std::move(model);
  g.count = count;
  g.model_other = std::move(other);
  return g;
}
}  // namespace

TEST(DeclaredGpus, EachModelKeepsItsOwnCount) {
  ApplicationForm f;
  f.gpus = {entry("L4", 2), entry("L40S", 1)};
  const auto d = declared_gpus(f);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].model, "L4");
  EXPECT_EQ(d[0].count, 2);
  EXPECT_EQ(d[1].model, "L40S");
  EXPECT_EQ(d[1].count, 1);
  EXPECT_EQ(declared_gpus_text(d), "2 × L4, 1 × L40S");
}

TEST(DeclaredGpus, EntriesOfOneModelAddUpInFirstSeenOrder) {
  ApplicationForm f;
  f.gpus = {entry("RTX-4090", 1), entry("L4", 2), entry("RTX-4090", 3), entry("other", 1, "MI300X")};
  EXPECT_EQ(declared_gpus_text(declared_gpus(f)), "4 × RTX-4090, 2 × L4, 1 × other: MI300X");
}

TEST(DeclaredGpus, NoEntriesIsEmpty) {
  EXPECT_EQ(declared_gpus_text(declared_gpus(ApplicationForm{})), "");
}

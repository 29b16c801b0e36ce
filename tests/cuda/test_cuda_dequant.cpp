// The decode matmul's dequantization forms, enumerated on the device over every bf16 scale and bias
// (dequant_forms.cu): no form may give other bits than the reference bf16(f32(scale * q) + bias) where the
// decode kernel would take it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"
#include "cuda/dequant_forms.hpp"

namespace plumb::cuda {
namespace {

TEST(CudaDequant, EveryFormGivesTheReferenceBitsWhereItIsTaken) {
  PLUMB_GPU_OR_SKIP();
  testing::DequantFormCounts counts{};
  ASSERT_TRUE(testing::enumerate_dequant_forms(counts)) << "a CUDA call of the enumeration failed";
  const std::string first =
      counts.claimed == 0u
          ? std::string("none")
          : fmt::format("scale | bias << 16 = {:#010x}, code {}: expected {:#010x}, got {:#010x}",
                        counts.first_entry, counts.first_code, counts.first_expected, counts.first_got);
  EXPECT_EQ(counts.rule_mismatches, 0u)
      << "the bits rule or the decode kernel's bitwise test differs from the float rule; first: " << first;
  EXPECT_EQ(counts.packed_mismatches, 0u) << "packed pairs differ from the reference; first: " << first;
  EXPECT_EQ(counts.subnormal_mismatches, 0u) << "subnormal pairs differ from the reference; first: " << first;
  // The forms must be taken somewhere, or the comparisons above prove nothing.
  EXPECT_GT(counts.subnormal_entries, uint64_t{1} << 28) << "subnormal pairs allowed for too few entries";
  EXPECT_GT(counts.exact_entries, counts.subnormal_entries);
  std::printf(
      "dequant forms: %llu of 2^32 (scale, bias) pairs single-rounding exact, %llu of them subnormal\n",
      counts.exact_entries, counts.subnormal_entries);
}

}  // namespace
}  // namespace plumb::cuda

// The 128-row matmul tile's wgmma steps give the bits of the mma.sync steps the other tiles make
// (wgmma_steps.cu): the premise of taking wgmma for prompt rows without breaking I1. The swapped form asks
// the same of a decode tile that would put the weight rows in A.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"
#include "cuda/wgmma_steps.hpp"

namespace plumb::cuda {
namespace {

void expect_wgmma_bits(testing::WgmmaForm form, unsigned long long cases = 45) {
  testing::WgmmaComparison result;
  ASSERT_TRUE(testing::compare_wgmma_with_mma_sync(128, form, result))
      << "a CUDA call of the comparison failed";
  if (!result.compiled)
    GTEST_SKIP() << "this build or GPU has no sm_90a code: the 128-row tile takes mma.sync";
  EXPECT_EQ(result.mismatches, 0u) << fmt::format(
      "{} of {} outputs differ; first: input kind {}, accumulator kind {}, from nothing {}, index {}: "
      "mma.sync "
      "{:#010x}, wgmma {:#010x}",
      result.mismatches, result.outputs, result.kind, result.accumulator, result.from_nothing, result.index,
      result.expected, result.got);
  EXPECT_EQ(result.outputs, cases * 128 * 64 * 128);  // every case ran
}

TEST(CudaWgmma, StepsGiveTheBitsOfMmaSyncSteps) {
  PLUMB_GPU_OR_SKIP();
  expect_wgmma_bits(testing::WgmmaForm::k_major);
}

// The values walk's B operand: rows of keys (N-major), 64 columns a chain.
TEST(CudaWgmma, NMajorStepsGiveTheBitsOfMmaSyncSteps) {
  PLUMB_GPU_OR_SKIP();
  expect_wgmma_bits(testing::WgmmaForm::n_major);
}

// The weight rows as A and the rows of x as B (outputs transposed): whether a decode tile of few rows could
// take 64 weight rows a warpgroup with the bits of the mma.sync tiles.
TEST(CudaWgmma, SwappedOperandsGiveTheBitsOfMmaSyncSteps) {
  PLUMB_GPU_OR_SKIP();
  expect_wgmma_bits(testing::WgmmaForm::swapped);
}

// The mma.sync chain with the weight rows as A and x's rows as B against x as A (the decode layout's kernel
// at up to 8 rows, kSwapped in k_matmul_decode_lanes.cu): 36 cases, as mma.sync never starts from nothing.
TEST(CudaWgmma, SwappedMmaSyncStepsGiveTheBitsOfMmaSyncSteps) {
  PLUMB_GPU_OR_SKIP();
  expect_wgmma_bits(testing::WgmmaForm::mma_sync_swapped, 36);
}

}  // namespace
}  // namespace plumb::cuda

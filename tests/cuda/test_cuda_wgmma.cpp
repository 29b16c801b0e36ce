// The 128-row matmul tile's wgmma steps give the bits of the mma.sync steps the other tiles make
// (wgmma_steps.cu): the premise of taking wgmma for prompt rows without breaking I1. The swapped form asks
// the same of a decode tile that would put the weight rows in A.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"
#include "cuda/wgmma_steps.hpp"

namespace plumb::cuda {
namespace {

void expect_wgmma_bits(testing::WgmmaForm form) {
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
  EXPECT_EQ(result.outputs, 45ull * 128 * 64 * 128);  // every case ran
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
// take 64 weight rows a warpgroup with the bits of the mma.sync tiles. Not yet run on a GPU.
TEST(CudaWgmma, SwappedOperandsGiveTheBitsOfMmaSyncSteps) {
  PLUMB_GPU_OR_SKIP();
  expect_wgmma_bits(testing::WgmmaForm::swapped);
}

}  // namespace
}  // namespace plumb::cuda

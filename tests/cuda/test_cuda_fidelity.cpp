// The Gemma 4 fidelity gate of the CPU backend (tests/models/gemma4/fidelity.hpp) on the CUDA backend: every
// HF transformers fixture within twice HF bf16's own error, with the same top-1 where it leads clearly.
#include "cuda_test_util.hpp"
#include "models/gemma4/fidelity.hpp"

namespace plumb::cuda {
namespace {

TEST(CudaGemma4, EveryFixtureWithinTwiceHfBf16Error) {
  PLUMB_GPU_OR_SKIP();
  ASSERT_TRUE(gemma4::testing::check_every_fixture(*testing::gpu()))
      << "no Gemma 4 reference fixtures at " << gemma4::testing::fixture_dir().string();
}

}  // namespace
}  // namespace plumb::cuda

// E4 through the Gemma 4 forward on CUDA: decode steps that replay a recorded CUDA graph unchanged (only ids,
// positions and draw options uploaded) give the bits of steps launched op by op (graph_steps.hpp).
#include "cuda_test_util.hpp"
#include "models/gemma4/graph_steps.hpp"

namespace plumb::cuda {
namespace {

TEST(CudaGraphForward, ReplayedDecodeStepsEqualEagerSteps) {
  PLUMB_GPU_OR_SKIP();
  gemma4::testing::TempDir dir{"plumb-cuda-graph-forward"};
  ASSERT_TRUE(gemma4::write_tiny_checkpoint(dir.path().string(), {}).ok());
  auto replaying = testing::make_gpu(CudaOptions{.graphs = true});
  auto eager = testing::make_gpu(CudaOptions{.graphs = false});
  ASSERT_NE(replaying, nullptr);
  ASSERT_NE(eager, nullptr);
  auto graphed = gemma4::load_model(dir.path().string(), *replaying);
  auto launched = gemma4::load_model(dir.path().string(), *eager);
  ASSERT_TRUE(graphed.ok()) << graphed.error().message;
  ASSERT_TRUE(launched.ok()) << launched.error().message;
  gemma4::testing::expect_replayed_steps_equal_launched(*graphed, *launched);
  EXPECT_EQ(eager->graph_launches(), 0) << "the eager backend ran graphs";
}

}  // namespace
}  // namespace plumb::cuda

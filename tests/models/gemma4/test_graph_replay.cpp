// E4 on machines without a GPU: the forward's graph path (kept tensors, signatures, record on the second
// sighting, replay from the third) over a backend that records and replays launches as CUDA graphs do, on
// the CPU backend, against the CPU backend launching op by op (graph_steps.hpp).
#include <gtest/gtest.h>

#include "graph_steps.hpp"
#include "recording_backend.hpp"

namespace plumb::gemma4 {
namespace {

TEST(GraphReplay, ReplayedDecodeStepsEqualLaunchedSteps) {
  testing::TempDir dir{"plumb-gemma4-graph-replay"};
  ASSERT_TRUE(write_tiny_checkpoint(dir.path().string(), TinyOptions{}).ok());
  testing::RecordingBackend recording(cpu::make_cpu_backend(2));
  auto launching = cpu::make_cpu_backend(2);
  auto graphed = load_model(dir.path().string(), recording);
  auto launched = load_model(dir.path().string(), *launching);
  ASSERT_TRUE(graphed.ok()) << graphed.error().message;
  ASSERT_TRUE(launched.ok()) << launched.error().message;
  testing::expect_replayed_steps_equal_launched(*graphed, *launched);
}

}  // namespace
}  // namespace plumb::gemma4

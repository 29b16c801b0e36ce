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

// Every model on a backend shares its graph cache (a drafter beside its target, a reloaded model): a second
// model with other weights must replay only its own graphs, never the first one's under the same key.
TEST(GraphReplay, TwoModelsOnOneBackendReplayOnlyTheirOwnGraphs) {
  testing::TempDir first_dir{"plumb-gemma4-graph-first"}, second_dir{"plumb-gemma4-graph-second"};
  ASSERT_TRUE(write_tiny_checkpoint(first_dir.path().string(), TinyOptions{}).ok());
  ASSERT_TRUE(write_tiny_checkpoint(second_dir.path().string(), TinyOptions{.seed = 5}).ok());
  testing::RecordingBackend recording(cpu::make_cpu_backend(2));
  auto launching = cpu::make_cpu_backend(2);
  auto first = load_model(first_dir.path().string(), recording);
  auto second = load_model(second_dir.path().string(), recording);
  auto first_launched = load_model(first_dir.path().string(), *launching);
  auto second_launched = load_model(second_dir.path().string(), *launching);
  ASSERT_TRUE(first.ok() && second.ok() && first_launched.ok() && second_launched.ok());
  testing::expect_replayed_steps_equal_launched(*first, *first_launched);
  testing::expect_replayed_steps_equal_launched(*second, *second_launched);
}

}  // namespace
}  // namespace plumb::gemma4

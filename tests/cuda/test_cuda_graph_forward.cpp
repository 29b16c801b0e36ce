// E4 through the Gemma 4 forward: decode steps that replay a recorded graph unchanged (only ids, positions
// and draw options uploaded) give the bits of forwards launched op by op, across what changes a step's
// launches: the attention end bucket (powers of two, into the split attention path past 512 keys), a global
// cache that grows (new addresses at 256 and 512 positions), a stream leaving the batch, and steps that draw
// on the device instead of returning logits. The replaying backend must really have replayed most steps.
#include "cuda_test_util.hpp"
#include "models/gemma4/tiny_model.hpp"

namespace plumb::cuda {
namespace {

using gemma4::LogitRows;
using gemma4::StreamChunk;
using gemma4::testing::test_tokens;

struct Streams {
  std::vector<gemma4::StreamCache> caches;
  std::vector<std::vector<int32_t>> tokens;  // each stream's whole teacher-forced sequence
};

Streams prefilled(const gemma4::Model& model, const std::vector<int64_t>& prompt_lengths, int64_t total) {
  Streams streams;
  for (size_t s = 0; s < prompt_lengths.size(); ++s) {
    auto cache = gemma4::new_stream(model, 64);
    EXPECT_TRUE(cache.ok()) << (cache.ok() ? "" : cache.error().message);
    if (!cache.ok()) return {};
    streams.caches.push_back(std::move(*cache));
    streams.tokens.push_back(test_tokens(total, 11 + static_cast<int>(s)));
  }
  for (size_t s = 0; s < prompt_lengths.size(); ++s) {
    const StreamChunk chunk{&streams.caches[s], std::span(streams.tokens[s]).first(prompt_lengths[s]), 0,
                            LogitRows::none};
    auto done = gemma4::forward(model, std::span(&chunk, 1));
    EXPECT_TRUE(done.ok()) << (done.ok() ? "" : done.error().message);
  }
  return streams;
}

// Step `step`: one row per live stream at its cache's end; every third step draws (greedy and seeded).
std::vector<StreamChunk> step_chunks(Streams& streams, int64_t step, size_t live) {
  std::vector<StreamChunk> chunks;
  for (size_t s = 0; s < live; ++s) {
    gemma4::StreamCache& cache = streams.caches[s];
    StreamChunk chunk{&cache, std::span(streams.tokens[s]).subspan(static_cast<size_t>(cache.end()), 1),
                      cache.end(), LogitRows::last};
    if (step % 3 == 2) chunk.draw = ops::SampleParams{s == 0 ? 0.0f : 0.8f, 0.95f, 0.0f, 0, 7 + s, 0};
    chunks.push_back(chunk);
  }
  return chunks;
}

TEST(CudaGraphForward, ReplayedDecodeStepsEqualEagerSteps) {
  PLUMB_GPU_OR_SKIP();
  gemma4::testing::TempDir dir{"plumb-cuda-graph-forward"};
  ASSERT_TRUE(gemma4::write_tiny_checkpoint(dir.path().string(), {}).ok());
  auto replaying = testing::make_gpu(CudaOptions{.graphs = true});
  auto eager = testing::make_gpu(CudaOptions{.graphs = false});
  ASSERT_NE(replaying, nullptr);
  ASSERT_NE(eager, nullptr);
  auto graphed_model = gemma4::load_model(dir.path().string(), *replaying);
  auto eager_model = gemma4::load_model(dir.path().string(), *eager);
  ASSERT_TRUE(graphed_model.ok() && eager_model.ok());
  const std::vector<int64_t> prompts = {20, 7, 33};
  constexpr int64_t kSteps = 520;  // the longest stream ends at 553: past 512, the split attention path
  Streams graphed = prefilled(*graphed_model, prompts, 600), launched = prefilled(*eager_model, prompts, 600);
  ASSERT_EQ(graphed.caches.size(), prompts.size());
  ASSERT_EQ(launched.caches.size(), prompts.size());
  const int64_t replays_before = replaying->graph_replays();
  for (int64_t step = 0; step < kSteps; ++step) {
    const size_t live = step < 300 ? 3 : 2;  // stream 2 leaves the batch at step 300
    const std::vector<StreamChunk> a = step_chunks(graphed, step, live),
                                   b = step_chunks(launched, step, live);
    auto from_graph = gemma4::forward(*graphed_model, a);
    auto from_ops = gemma4::forward(*eager_model, b);
    ASSERT_TRUE(from_graph.ok()) << from_graph.error().message;
    ASSERT_TRUE(from_ops.ok()) << from_ops.error().message;
    ASSERT_EQ(from_graph->draws, from_ops->draws) << "step " << step << " draws";
    for (int64_t r = 0; r < from_ops->rows && from_ops->draws.empty(); ++r)
      gemma4::testing::expect_same_bits(
          from_ops->row(r), from_graph->row(r),
          fmt::format("step {} stream {} (position {})", step, r, a[r].first_position));
    if (::testing::Test::HasFailure()) return;
  }
  const int64_t replays = replaying->graph_replays() - replays_before;
  std::printf("graph forward: %lld of %lld steps replayed a recorded graph\n",
              static_cast<long long>(replays), static_cast<long long>(kSteps));
  EXPECT_GE(replays, kSteps * 3 / 4) << "most steps must replay a graph unchanged";
  EXPECT_EQ(eager->graph_launches(), 0) << "the eager backend ran graphs";
}

}  // namespace
}  // namespace plumb::cuda

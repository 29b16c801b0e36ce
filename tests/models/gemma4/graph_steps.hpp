#pragma once
// E4 through the Gemma 4 forward, for any backend with graphs: teacher-forced decode steps on a model whose
// backend records and replays graphs give the bits of the same steps on a model whose backend launches op by
// op, across what changes a step's launches: the attention end bucket (every 64 keys, into the split CUDA
// attention path past 512), global caches that grow (new addresses at 256 and 512 positions), a stream
// leaving the batch, two streams trading places in it, and steps that draw on the device instead of returning
// logits. Most steps must have replayed a recorded graph unchanged.
#include <fmt/format.h>

#include "models/gemma4/tiny_model.hpp"

namespace plumb::gemma4::testing {

struct StepStreams {
  std::vector<StreamCache> caches;
  std::vector<std::vector<int32_t>> tokens;  // each stream's whole teacher-forced sequence
};

inline StepStreams prefilled_streams(const Model& model, const std::vector<int64_t>& prompt_lengths,
                                     int64_t total) {
  StepStreams streams;
  for (size_t s = 0; s < prompt_lengths.size(); ++s) {
    auto cache = new_stream(model, 64);
    EXPECT_TRUE(cache.ok()) << (cache.ok() ? "" : cache.error().message);
    if (!cache.ok()) return {};
    streams.caches.push_back(std::move(*cache));
    streams.tokens.push_back(test_tokens(static_cast<size_t>(total), 11 + static_cast<uint32_t>(s)));
  }
  for (size_t s = 0; s < prompt_lengths.size(); ++s) {
    const StreamChunk chunk{&streams.caches[s], std::span(streams.tokens[s]).first(prompt_lengths[s]), 0,
                            LogitRows::none};
    auto done = forward(model, std::span(&chunk, 1));
    EXPECT_TRUE(done.ok()) << (done.ok() ? "" : done.error().message);
  }
  return streams;
}

// The streams in a step's batch, in order: stream 2 leaves at step 300, and from step 400 streams 0 and 1
// trade places (the same shapes and capacities, other caches in each place).
inline std::vector<size_t> batch_order(int64_t step) {
  if (step < 300) return {0, 1, 2};
  if (step < 400) return {0, 1};
  return {1, 0};
}

// Step `step`: one row per stream in the batch at its cache's end; every third step draws (greedy and
// seeded).
inline std::vector<StreamChunk> step_chunks(StepStreams& streams, int64_t step) {
  std::vector<StreamChunk> chunks;
  for (const size_t s : batch_order(step)) {
    StreamCache& cache = streams.caches[s];
    StreamChunk chunk{&cache, std::span(streams.tokens[s]).subspan(static_cast<size_t>(cache.end()), 1),
                      cache.end(), LogitRows::last};
    if (step % 3 == 2) chunk.draw = ops::SampleParams{s == 0 ? 0.0f : 0.8f, 0.95f, 0.0f, 0, 7 + s, 0};
    chunks.push_back(chunk);
  }
  return chunks;
}

// Runs the steps on both models, comparing every step; returns the graph replays the first backend made.
inline int64_t expect_replayed_steps_equal_launched(const Model& graphed, const Model& launched) {
  constexpr int64_t kSteps = 520;  // the longest stream ends at 553
  const std::vector<int64_t> prompts = {20, 7, 33};
  StepStreams a = prefilled_streams(graphed, prompts, 600), b = prefilled_streams(launched, prompts, 600);
  EXPECT_EQ(a.caches.size(), prompts.size());
  EXPECT_EQ(b.caches.size(), prompts.size());
  if (a.caches.size() != prompts.size() || b.caches.size() != prompts.size()) return 0;
  const int64_t replays_before = graphed.backend->graph_replays();
  for (int64_t step = 0; step < kSteps; ++step) {
    const std::vector<StreamChunk> chunks_a = step_chunks(a, step), chunks_b = step_chunks(b, step);
    auto from_graph = forward(graphed, chunks_a);
    auto from_ops = forward(launched, chunks_b);
    EXPECT_TRUE(from_graph.ok()) << (from_graph.ok() ? "" : from_graph.error().message);
    EXPECT_TRUE(from_ops.ok()) << (from_ops.ok() ? "" : from_ops.error().message);
    if (!from_graph.ok() || !from_ops.ok()) return 0;
    EXPECT_EQ(from_graph->draws, from_ops->draws) << "step " << step << " draws";
    for (int64_t r = 0; r < from_ops->rows && from_ops->draws.empty(); ++r)
      expect_same_bits(from_ops->row(r), from_graph->row(r),
                       fmt::format("step {} stream {} (position {})", step, r, chunks_a[r].first_position));
    if (::testing::Test::HasFailure()) return 0;
  }
  const int64_t replays = graphed.backend->graph_replays() - replays_before;
  std::printf("graph forward: %lld of %lld steps replayed a recorded graph\n",
              static_cast<long long>(replays), static_cast<long long>(kSteps));
  EXPECT_GE(replays, kSteps * 3 / 4) << "most steps must replay a graph unchanged";
  return replays;
}

}  // namespace plumb::gemma4::testing

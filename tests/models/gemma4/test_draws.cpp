// Draws made inside the forward (StreamChunk::draw, the backend's sample op) equal the host's keyed draw
// from the same forward's logits, row for row and at the drawn token's position; chunks that mix draws and
// logits are refused by index, with the caches left as they were.
#include <gtest/gtest.h>

#include "ops/sampling.hpp"
#include "tiny_model.hpp"

namespace plumb::gemma4 {
namespace {

using testing::load_tiny;
using testing::test_tokens;

// Two streams' chunks at positions 0.., every row's logits asked for, with `draws` per stream or none.
Result<Logits> run_two_streams(const Model& model, std::span<const std::vector<int32_t>> tokens,
                               std::span<const std::optional<ops::SampleParams>> draws) {
  std::vector<StreamCache> caches;
  std::vector<StreamChunk> chunks;
  for (size_t s = 0; s < tokens.size(); ++s) {
    auto cache = new_stream(model, 16);
    if (!cache.ok()) return cache.error();
    caches.push_back(std::move(*cache));
  }
  for (size_t s = 0; s < tokens.size(); ++s)
    chunks.push_back({&caches[s], tokens[s], 0, LogitRows::all, draws[s]});
  return forward(model, chunks);
}

TEST(Gemma4Draws, ForwardDrawsEqualTheHostsDrawsFromTheSameLogits) {
  auto tiny = load_tiny(TinyOptions{});
  ASSERT_NE(tiny, nullptr);
  const std::vector<std::vector<int32_t>> tokens = {test_tokens(7, 1), test_tokens(5, 2)};
  const std::vector<std::optional<ops::SampleParams>> draws = {
      ops::SampleParams{},  // greedy
      ops::SampleParams{1.3f, 0.9f, 0.02f, 0, 77, 0}};
  const std::vector<std::optional<ops::SampleParams>> none(2);
  auto drawn = run_two_streams(tiny->model, tokens, draws);
  auto logits = run_two_streams(tiny->model, tokens, none);
  ASSERT_TRUE(drawn.ok()) << drawn.error().message;
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  ASSERT_EQ(drawn->draws.size(), 12u);
  ASSERT_TRUE(drawn->values.empty());
  ASSERT_EQ(logits->rows, 12);
  int64_t row = 0;
  for (size_t s = 0; s < tokens.size(); ++s)
    for (size_t i = 0; i < tokens[s].size(); ++i, ++row) {
      ops::SampleParams params = *draws[s];
      params.position = static_cast<int64_t>(i) + 1;  // the drawn token follows row i
      EXPECT_EQ(drawn->draws[static_cast<size_t>(row)], ops::draw_keyed(logits->row(row), params))
          << "stream " << s << " row " << i;
    }
}

TEST(Gemma4Draws, ChunksMixingDrawsAndLogitsAreRefusedByIndex) {
  auto tiny = load_tiny(TinyOptions{});
  ASSERT_NE(tiny, nullptr);
  const std::vector<int32_t> tokens = test_tokens(4);
  auto first = new_stream(tiny->model, 16), second = new_stream(tiny->model, 16);
  ASSERT_TRUE(first.ok() && second.ok());
  const std::vector<StreamChunk> chunks = {{&*first, tokens, 0, LogitRows::last, ops::SampleParams{}},
                                           {&*second, tokens, 0, LogitRows::last, std::nullopt}};
  auto result = forward(tiny->model, chunks);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("chunk '1' mixes draws and logits"), std::string::npos)
      << result.error().message;
  EXPECT_EQ(first->end(), 0);
  EXPECT_EQ(second->end(), 0);
}

}  // namespace
}  // namespace plumb::gemma4

// The forward's exactness invariants on tiny checkpoints (bf16 and MLX affine): I2 step-by-step rows equal
// `score` rows, I3 any prompt chunking gives the same rows, I4 two runs are identical, I1 a stream's rows do
// not depend on the other streams in the batch. Sequences are longer than the sliding window (8).
#include <algorithm>
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "models/gemma4/generate.hpp"
#include "tiny_model.hpp"

namespace plumb::gemma4 {
namespace {

using testing::expect_same_bits;
using testing::load_tiny;
using testing::test_tokens;

struct Variant {
  const char* name;
  std::optional<int> bits;
  int group;
};

class Gemma4Invariants : public ::testing::TestWithParam<Variant> {
 protected:
  static void SetUpTestSuite() {}
  void SetUp() override {
    TinyOptions options;
    options.bits = GetParam().bits;
    options.group = GetParam().group;
    tiny_ = load_tiny(options);
    ASSERT_NE(tiny_, nullptr);
  }
  const Model& model() const { return tiny_->model; }

  Logits score_all(std::span<const int32_t> tokens, int64_t chunk_rows) {
    auto logits = score(model(), tokens, chunk_rows);
    EXPECT_TRUE(logits.ok()) << (logits.ok() ? "" : logits.error().message);
    return logits.ok() ? *logits : Logits{};
  }

  std::unique_ptr<testing::LoadedTiny> tiny_;
};

TEST_P(Gemma4Invariants, StepByStepRowsEqualScoreRows) {
  const std::vector<int32_t> tokens = test_tokens(21);
  const Logits scored = score_all(tokens, 256);
  ASSERT_EQ(scored.rows, 21);
  // Generation that is fed the sequence's own tokens: prompt of 3, then one decode row per step.
  GenerateOptions options;
  options.max_tokens = static_cast<int64_t>(tokens.size()) - 2;
  options.prompt_chunk_rows = 2;
  int64_t rows_seen = 0;
  const auto draw = [&](int64_t position, std::span<const float> row) {
    expect_same_bits(scored.row(position - 1), row, "decode row for position " + std::to_string(position));
    ++rows_seen;
    return position < static_cast<int64_t>(tokens.size()) ? tokens[static_cast<size_t>(position)] : 0;
  };
  auto generation = generate(model(), std::span(tokens).first(3), options, draw);
  ASSERT_TRUE(generation.ok()) << generation.error().message;
  EXPECT_EQ(rows_seen, options.max_tokens);
}

TEST_P(Gemma4Invariants, AnyPromptChunkingGivesTheSameRows) {
  const std::vector<int32_t> tokens = test_tokens(23, 5);
  const Logits whole = score_all(tokens, 64);
  for (int64_t chunk : {1, 2, 3, 7, 8, 9, 16}) {
    const Logits chunked = score_all(tokens, chunk);
    ASSERT_EQ(chunked.rows, whole.rows);
    for (int64_t r = 0; r < whole.rows; ++r)
      expect_same_bits(whole.row(r), chunked.row(r),
                       "chunk " + std::to_string(chunk) + " row " + std::to_string(r));
  }
}

TEST_P(Gemma4Invariants, TwoRunsAreIdentical) {
  const std::vector<int32_t> tokens = test_tokens(17, 9);
  const Logits first = score_all(tokens, 5);
  const Logits second = score_all(tokens, 5);
  ASSERT_EQ(first.values.size(), second.values.size());
  expect_same_bits(first.values, second.values, "rerun");
}

TEST_P(Gemma4Invariants, RowsDoNotDependOnTheOtherStreamsInTheBatch) {
  const std::vector<int32_t> a = test_tokens(14, 21), b = test_tokens(11, 22), c = test_tokens(19, 23);
  const Logits alone = score_all(a, 64);
  // Stream a's rows computed beside streams b and c, in different orders and with a at several row offsets.
  for (int order = 0; order < 3; ++order) {
    auto cache_a = new_stream(model(), 64), cache_b = new_stream(model(), 64),
         cache_c = new_stream(model(), 64);
    ASSERT_TRUE(cache_a.ok() && cache_b.ok() && cache_c.ok());
    std::vector<StreamChunk> chunks = {{&*cache_b, b, 0, LogitRows::all},
                                       {&*cache_c, c, 0, LogitRows::last},
                                       {&*cache_a, a, 0, LogitRows::all}};
    std::rotate(chunks.begin(), chunks.begin() + order, chunks.end());
    auto batch = forward(model(), chunks);
    ASSERT_TRUE(batch.ok()) << batch.error().message;
    int64_t row = 0;
    for (const StreamChunk& chunk : chunks) {
      if (chunk.cache == &*cache_a)
        for (int64_t r = 0; r < alone.rows; ++r)
          expect_same_bits(alone.row(r), batch->row(row + r),
                           "order " + std::to_string(order) + " row " + std::to_string(r));
      row += chunk.logits == LogitRows::all ? static_cast<int64_t>(chunk.tokens.size()) : 1;
    }
    ASSERT_EQ(row, batch->rows);
  }
}

TEST_P(Gemma4Invariants, DecodeBesideOtherStreamsMatchesSoloDecode) {
  const std::vector<int32_t> a = test_tokens(12, 31), b = test_tokens(20, 32);
  const Logits solo = score_all(a, 64);
  auto cache_a = new_stream(model(), 4), cache_b = new_stream(model(), 4);
  ASSERT_TRUE(cache_a.ok() && cache_b.ok());
  // Both streams advance one row per call; b has a longer history, so its windows differ from a's.
  for (size_t step = 0; step < b.size(); ++step) {
    std::vector<StreamChunk> chunks = {
        {&*cache_b, std::span(b).subspan(step, 1), static_cast<int64_t>(step), LogitRows::last}};
    if (step < a.size())
      chunks.push_back(
          {&*cache_a, std::span(a).subspan(step, 1), static_cast<int64_t>(step), LogitRows::last});
    auto logits = forward(model(), chunks);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    if (step < a.size())
      expect_same_bits(solo.row(static_cast<int64_t>(step)), logits->row(1), "step " + std::to_string(step));
  }
}

TEST_P(Gemma4Invariants, RollbackThenRewriteEqualsAFreshRun) {
  const std::vector<int32_t> tokens = test_tokens(16, 41);
  const Logits scored = score_all(tokens, 64);
  auto cache = new_stream(model(), 4);
  ASSERT_TRUE(cache.ok());
  // Feed 12 rows, the last 3 of them wrong drafts, roll back and feed the right ones.
  std::vector<int32_t> drafted(tokens.begin(), tokens.begin() + 12);
  for (size_t i = 9; i < 12; ++i) drafted[i] = 300 + static_cast<int32_t>(i);
  for (size_t first = 0; first < 12; first += 4) {
    const StreamChunk chunk{&*cache, std::span(drafted).subspan(first, 4), static_cast<int64_t>(first),
                            LogitRows::none};
    ASSERT_TRUE(forward(model(), std::span(&chunk, 1)).ok());
  }
  ASSERT_TRUE(cache->roll_back(9).ok());
  const StreamChunk rewrite{&*cache, std::span(tokens).subspan(9, 4), 9, LogitRows::all};
  auto logits = forward(model(), std::span(&rewrite, 1));
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  for (int64_t r = 0; r < 4; ++r)
    expect_same_bits(scored.row(9 + r), logits->row(r), "rewritten row " + std::to_string(9 + r));
}

// The checks above compare bits; this one makes sure there are meaningful bits to compare: finite, varied
// logits that move when an earlier token changes, also from beyond the sliding window (the global layer).
TEST_P(Gemma4Invariants, LogitsAreFiniteVariedAndDependOnTheContext) {
  std::vector<int32_t> tokens = test_tokens(20, 51);
  const Logits base = score_all(tokens, 64);
  float low = 1e30f, high = -1e30f;
  for (float value : base.values) {
    ASSERT_TRUE(std::isfinite(value));
    low = std::min(low, value), high = std::max(high, value);
  }
  EXPECT_GT(high - low, 1.0f) << "logits span";
  EXPECT_LE(high, 30.0f) << "soft cap";
  tokens[2] = tokens[2] == 400 ? 401 : 400;  // 17 positions before the last row: outside every sliding window
  const Logits changed = score_all(tokens, 64);
  EXPECT_EQ(std::memcmp(base.row(1).data(), changed.row(1).data(), base.vocab * sizeof(float)), 0)
      << "rows before the change do not move";
  EXPECT_NE(std::memcmp(base.row(19).data(), changed.row(19).data(), base.vocab * sizeof(float)), 0)
      << "the last row sees position 2 through the global layer";
}

INSTANTIATE_TEST_SUITE_P(Tiny, Gemma4Invariants,
                         ::testing::Values(Variant{"bf16", std::nullopt, 64}, Variant{"affine4g64", 4, 64},
                                           Variant{"affine3g32", 3, 32}, Variant{"affine6g128", 6, 128}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace plumb::gemma4

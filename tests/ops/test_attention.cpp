// Attention on the CPU: against the float64 reference (global, sliding, GQA, scale), and the path invariants:
// prompt rows equal decode rows (I2) and every chunk size gives the same rows (I3).
#include <cmath>

#include "attention_stream.hpp"
#include "cpu/cpu_backend.hpp"

namespace plumb::ops {
namespace {

using testing::AttentionCase;
using testing::Values;

class Attention : public ::testing::TestWithParam<AttentionCase> {
 protected:
  std::unique_ptr<Backend> backend = cpu::make_cpu_backend(4);
};

TEST_P(Attention, PromptRowsMatchTheReference) {
  const AttentionCase c = GetParam();
  const testing::StreamInputs in = testing::stream_inputs(c, 100);
  const Values got = testing::bytes_to_values(testing::run_stream(*backend, c, in, c.tokens));
  std::vector<int32_t> positions(static_cast<size_t>(c.tokens));
  for (int64_t t = 0; t < c.tokens; ++t) positions[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  const Values expected = reference::attention(in.q, c.tokens, c.heads, c.kv_heads, c.dim, positions, in.keys,
                                               in.values, c.window, c.scale);
  double largest_value = 0;
  for (double value : in.values) largest_value = std::max(largest_value, std::abs(value));
  // A softmax weight can flip one bf16 step (2^-7 of itself, weights sum to 1); the fp32 sum adds keys
  // roundings.
  const double slack =
      (std::ldexp(1.0, -7) + static_cast<double>(c.tokens + c.dim) * std::ldexp(1.0, -24)) * largest_value;
  testing::expect_bf16_close(
      fmt::format("attention window {} heads {}/{}", c.window, c.heads, c.kv_heads), got, expected,
      [&](size_t) { return slack; }, 0.97);
}

TEST_P(Attention, DecodeStepsGiveThePromptRowsBitForBit) {
  const AttentionCase c = GetParam();
  const testing::StreamInputs in = testing::stream_inputs(c, 200);
  const std::vector<uint8_t> prompt = testing::run_stream(*backend, c, in, c.tokens);
  const std::vector<uint8_t> decode = testing::run_stream(*backend, c, in, 1);
  ASSERT_EQ(prompt.size(), decode.size());
  for (size_t k = 0; k < prompt.size(); ++k)
    ASSERT_EQ(prompt[k], decode[k]) << "byte " << k << " (token " << k / (2 * c.heads * c.dim) << ")";
}

TEST_P(Attention, EveryChunkSizeGivesTheSameRows) {
  const AttentionCase c = GetParam();
  const testing::StreamInputs in = testing::stream_inputs(c, 300);
  const std::vector<uint8_t> whole = testing::run_stream(*backend, c, in, c.tokens);
  for (const int64_t chunk : {2, 3, 7, 16}) {
    const std::vector<uint8_t> chunked = testing::run_stream(*backend, c, in, chunk);
    ASSERT_EQ(whole, chunked) << "chunk " << chunk;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Attention,
                         ::testing::Values(AttentionCase{4, 2, 32, 0, 40, 1.0f},
                                           AttentionCase{4, 2, 32, 8, 40, 1.0f},
                                           AttentionCase{8, 1, 64, 0, 33, 1.0f},
                                           AttentionCase{4, 4, 16, 5, 29, 0.25f}));

TEST(AttentionStress, EqualScoresWeighEveryKeyByBf16OfOneOverTheCount) {
  // q = 0 gives equal scores, so every weight is bf16(1/keys); the values cancel pairwise except the last.
  auto backend = cpu::make_cpu_backend(2);
  const AttentionCase c{2, 1, 16, 0, 7, 1.0f};
  testing::StreamInputs in{Values(c.tokens * c.heads * c.dim, 0.0),
                           testing::random_bf16(1, c.tokens * c.dim, -1, 1), Values(c.tokens * c.dim)};
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int64_t d = 0; d < c.dim; ++d)
      in.values[t * c.dim + d] = (t % 2 == 0 ? 1.0 : -1.0) * std::ldexp(1.0, 20) * (d + 1);
  const Values got = testing::bytes_to_values(testing::run_stream(*backend, c, in, c.tokens));
  for (int64_t t = 0; t < c.tokens; ++t) {
    const double weight = reference::round_bf16(1.0 / static_cast<double>(t + 1));
    for (int64_t d = 0; d < c.dim; ++d) {
      const double expected =
          reference::round_bf16(t % 2 == 0 ? weight * std::ldexp(1.0, 20) * (d + 1) : 0.0);
      for (int64_t h = 0; h < c.heads; ++h)
        ASSERT_EQ(got[(t * c.heads + h) * c.dim + d], expected)
            << "token " << t << " head " << h << " dim " << d;
    }
  }
}

TEST(AttentionSegments, RowsOfTwoStreamsInOneCallEqualEachStreamAlone) {
  auto backend = cpu::make_cpu_backend(2);
  const AttentionCase c{4, 2, 32, 6, 12, 1.0f};
  const testing::StreamInputs first = testing::stream_inputs(c, 400), second = testing::stream_inputs(c, 500);
  const std::vector<uint8_t> first_alone = testing::run_stream(*backend, c, first, c.tokens);
  const std::vector<uint8_t> second_alone = testing::run_stream(*backend, c, second, c.tokens);
  // Both streams' caches filled; the last 3 rows of each attend in one call with two segments.
  std::vector<DeviceTensor> keep;
  std::vector<KvSegment> segments;
  Values q_rows;
  std::vector<int32_t> positions;
  for (const testing::StreamInputs* in : {&first, &second}) {
    keep.push_back(testing::device_bf16(*backend, in->keys, {c.tokens, c.kv_heads, c.dim}));
    keep.push_back(testing::device_bf16(*backend, in->values, {c.tokens, c.kv_heads, c.dim}));
    segments.push_back({static_cast<int64_t>(segments.size()) * 3,
                        3,
                        {keep[keep.size() - 2].view, keep.back().view, c.tokens}});
    q_rows.insert(q_rows.end(), in->q.end() - 3 * c.heads * c.dim, in->q.end());
    for (int32_t p = static_cast<int32_t>(c.tokens) - 3; p < c.tokens; ++p) positions.push_back(p);
  }
  DeviceTensor q = testing::device_bf16(*backend, q_rows, {6, c.heads, c.dim});
  DeviceTensor position_tensor = testing::device_i32(*backend, positions);
  DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {6, c.heads, c.dim});
  ASSERT_TRUE(
      attention(*backend, q.view, position_tensor.view, segments, {c.window, c.scale}, out.view).ok());
  const std::vector<uint8_t> both = testing::download_bytes(*backend, out.view);
  const size_t half = both.size() / 2;
  EXPECT_TRUE(std::equal(both.begin(), both.begin() + half, first_alone.end() - half))
      << "first stream's rows";
  EXPECT_TRUE(std::equal(both.begin() + half, both.end(), second_alone.end() - half))
      << "second stream's rows";
}

}  // namespace
}  // namespace plumb::ops

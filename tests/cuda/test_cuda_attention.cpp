// Attention on CUDA: within the range of the float64 reference (each probability may land one bf16 ulp away,
// sums in fp32); prompt, decode and any chunking give the same bits (I2, I3); a stream's rows are the same
// alone or beside other streams' rows in one call (I1); repeats are identical (I4).
#include <limits>

#include "cuda_test_util.hpp"
#include "ops/attention_stream.hpp"

namespace plumb::cuda {
namespace {

using ops::testing::AttentionCase;
using testing::gpu;

// sum_j p_j |v_j| per output element, p the exact softmax over the visible keys: the scale of every error
// term.
Values weighted_magnitudes(const AttentionCase& c, const ops::testing::StreamInputs& in) {
  Values out(static_cast<size_t>(c.tokens * c.heads * c.dim), 0.0);
  const int64_t group = c.heads / c.kv_heads;
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kv = h / group, first = c.window > 0 ? std::max<int64_t>(0, t - c.window + 1) : 0;
      std::vector<double> scores;
      for (int64_t j = first; j <= t; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < c.dim; ++d)
          dot += in.q[(t * c.heads + h) * c.dim + d] * in.keys[(j * c.kv_heads + kv) * c.dim + d];
        scores.push_back(c.scale * dot);
      }
      const double top = *std::max_element(scores.begin(), scores.end());
      double total = 0;
      for (double& s : scores) total += (s = std::exp(s - top));
      for (int64_t j = first; j <= t; ++j)
        for (int64_t d = 0; d < c.dim; ++d)
          out[(t * c.heads + h) * c.dim + d] +=
              scores[j - first] / total * std::abs(in.values[(j * c.kv_heads + kv) * c.dim + d]);
    }
  return out;
}

// Cases of 600 and more tokens reach more than 8 partitions of 64 keys, where prompt rows take the split path
// (the tiled walk, which stages the queries and keys in 64-column pieces: 512 takes eight) while early decode
// rows still walk their partitions in one block, and chunks of 7 rows take the per-row kernels (partials
// and a merge kernel); groups of 4 and 16 take the kernels' 4- and 16-head blocks on decode rows.
const AttentionCase kCases[] = {
    {4, 2, 32, 0, 40, 1.0f},    {16, 8, 256, 70, 200, 1.0f},  {16, 1, 512, 0, 150, 1.0f},
    {8, 8, 64, 1, 20, 0.125f},  {6, 3, 100, 0, 130, 1.0f},    {8, 2, 64, 0, 700, 1.0f},
    {8, 2, 64, 600, 700, 1.0f}, {16, 1, 128, 0, 600, 0.125f}, {16, 1, 512, 0, 600, 0.0625f},
};

TEST(CudaAttention, IsWithinTheReferenceRange) {
  PLUMB_GPU_OR_SKIP();
  for (const AttentionCase& c : kCases) {
    const ops::testing::StreamInputs in = ops::testing::stream_inputs(c, 7 + c.dim);
    const Values got = ops::testing::bytes_to_values(ops::testing::run_stream(*gpu(), c, in, c.tokens));
    std::vector<int32_t> positions(static_cast<size_t>(c.tokens));
    for (int64_t t = 0; t < c.tokens; ++t) positions[t] = static_cast<int32_t>(t);
    const Values reference = ops::reference::attention(in.q, c.tokens, c.heads, c.kv_heads, c.dim, positions,
                                                       in.keys, in.values, c.window, c.scale);
    const Values magnitude = weighted_magnitudes(c, in);
    // One bf16 ulp (at most 2^-7 relative) per probability, plus the fp32 sums over keys and partitions.
    const double relative =
        (std::ldexp(1.0, -7) + testing::gamma_f32(static_cast<double>(c.tokens + 8))) * 1.01;
    testing::expect_within(
        fmt::format("attention heads {}/{} dim {} window {}", c.heads, c.kv_heads, c.dim, c.window), got,
        reference, [&](size_t k) { return relative * magnitude[k]; }, true);
  }
}

TEST(CudaAttention, PromptDecodeAndChunksGiveTheSameBits) {
  PLUMB_GPU_OR_SKIP();
  for (const AttentionCase& c : kCases) {
    const ops::testing::StreamInputs in = ops::testing::stream_inputs(c, 11 + c.dim);
    const std::vector<uint8_t> prompt = ops::testing::run_stream(*gpu(), c, in, c.tokens);
    const std::string what =
        fmt::format("heads {}/{} dim {} window {}", c.heads, c.kv_heads, c.dim, c.window);
    testing::expect_same_bits(what + ": decode", ops::testing::run_stream(*gpu(), c, in, 1), prompt, 2);
    testing::expect_same_bits(what + ": chunks of 7", ops::testing::run_stream(*gpu(), c, in, 7), prompt, 2);
    testing::expect_same_bits(what + ": repeat", ops::testing::run_stream(*gpu(), c, in, c.tokens), prompt,
                              2);
  }
}

// A value only the last row sees is infinite: the rows before it, which share the last prompt tile with it,
// keep the bits they have alone (their zero weights must never meet that value: 0 x inf is NaN).
TEST(CudaAttention, AnInfiniteValueOnlyTheLastRowSeesLeavesTheOtherRowsAlone) {
  PLUMB_GPU_OR_SKIP();
  const AttentionCase c{16, 8, 256, 0, 600, 1.0f};  // over 8 partitions: prompt rows take the value tiles
  ops::testing::StreamInputs in = ops::testing::stream_inputs(c, 29);
  const int64_t last = c.tokens - 1;
  for (int64_t i = last * c.kv_heads * c.dim; i < c.tokens * c.kv_heads * c.dim; ++i)
    in.values[static_cast<size_t>(i)] = std::numeric_limits<double>::infinity();
  const auto before_last = [&](const std::vector<uint8_t>& bytes) {
    return std::vector<uint8_t>(bytes.begin(), bytes.begin() + last * c.heads * c.dim * 2);
  };
  testing::expect_same_bits("rows before the infinite value, prompt against decode",
                            before_last(ops::testing::run_stream(*gpu(), c, in, c.tokens)),
                            before_last(ops::testing::run_stream(*gpu(), c, in, 1)), 2);
}

// One stream's cache holding all its tokens, and its last `rows` query rows.
struct Stream {
  AttentionCase shape;
  ops::testing::StreamInputs in;
  DeviceTensor keys, values;
  int64_t rows;
};

Stream make_stream(const AttentionCase& c, int64_t rows, uint64_t seed) {
  Stream s{c, ops::testing::stream_inputs(c, seed), {}, {}, rows};
  s.keys = ops::testing::device_bf16(*gpu(), s.in.keys, {c.tokens, c.kv_heads, c.dim});
  s.values = ops::testing::device_bf16(*gpu(), s.in.values, {c.tokens, c.kv_heads, c.dim});
  return s;
}

// Attention for the streams' query rows in one call; returns each stream's output bytes.
std::vector<std::vector<uint8_t>> attend(const std::vector<const Stream*>& streams) {
  const AttentionCase& c = streams[0]->shape;
  Values q;
  std::vector<int32_t> positions;
  std::vector<ops::KvSegment> segments;
  for (const Stream* s : streams) {
    const int64_t first_token = s->shape.tokens - s->rows;
    segments.push_back(
        {static_cast<int64_t>(positions.size()), s->rows, {s->keys.view, s->values.view, s->shape.tokens}});
    for (int64_t t = first_token; t < s->shape.tokens; ++t) positions.push_back(static_cast<int32_t>(t));
    q.insert(q.end(), s->in.q.begin() + first_token * c.heads * c.dim, s->in.q.end());
  }
  const auto rows = static_cast<int64_t>(positions.size());
  DeviceTensor tq = ops::testing::device_bf16(*gpu(), q, {rows, c.heads, c.dim});
  DeviceTensor tp = ops::testing::device_i32(*gpu(), positions);
  DeviceTensor out = ops::testing::device_zeros(*gpu(), DType::bf16, {rows, c.heads, c.dim});
  EXPECT_TRUE(ops::attention(*gpu(), tq.view, tp.view, segments, {c.window, c.scale}, out.view).ok());
  const std::vector<uint8_t> bytes = ops::testing::download_bytes(*gpu(), out.view);
  std::vector<std::vector<uint8_t>> each;
  size_t at = 0;
  for (const Stream* s : streams) {
    const size_t size = static_cast<size_t>(s->rows * c.heads * c.dim * 2);
    each.emplace_back(bytes.begin() + static_cast<int64_t>(at),
                      bytes.begin() + static_cast<int64_t>(at + size));
    at += size;
  }
  return each;
}

TEST(CudaAttention, AStreamsRowsDoNotDependOnTheOtherStreams) {
  PLUMB_GPU_OR_SKIP();
  for (int64_t window : {int64_t{0}, int64_t{50}}) {
    const Stream a = make_stream({16, 8, 256, window, 300, 1.0f}, 1, 1);
    const Stream b = make_stream({16, 8, 256, window, 90, 1.0f}, 17, 2);
    const Stream d = make_stream({16, 8, 256, window, 5, 1.0f}, 5, 3);
    const std::vector<uint8_t> alone = attend({&a})[0];
    const std::vector<std::vector<uint8_t>> together = attend({&b, &a, &d});
    testing::expect_same_bits(fmt::format("window {}: stream beside two others", window), together[1], alone,
                              2);
    testing::expect_same_bits(fmt::format("window {}: first stream", window), together[0], attend({&b})[0],
                              2);
  }
}

// More streams than one launch takes (attention_device.cuh's kMaxSegments): the rows go in two chunks, and
// each stream's rows are still its own run's.
TEST(CudaAttention, StreamsBeyondOneLaunchGiveEachStreamsBits) {
  PLUMB_GPU_OR_SKIP();
  for (int64_t window : {int64_t{0}, int64_t{50}}) {
    std::vector<Stream> streams;
    for (int i = 0; i < 40; ++i)
      streams.push_back(make_stream({16, 8, 256, window, 20 + 7 * i, 1.0f}, i % 3 == 0 ? 2 : 1, 100 + i));
    std::vector<const Stream*> all;
    for (const Stream& s : streams) all.push_back(&s);
    const std::vector<std::vector<uint8_t>> together = attend(all);
    for (size_t i = 0; i < streams.size(); ++i) {
      testing::expect_same_bits(fmt::format("window {}: stream {} of 40", window, i), together[i],
                                attend({&streams[i]})[0], 2);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace plumb::cuda

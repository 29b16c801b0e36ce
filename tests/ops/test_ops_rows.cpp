// Row-wise CPU ops against their float64 references: embedding (exact), RMSNorm, q/k norm with RoPE.
#include <cmath>

#include "cpu/cpu_backend.hpp"
#include "ops/affine.hpp"
#include "ops_test_util.hpp"

namespace plumb::ops {
namespace {

using testing::Values;

class OpsRows : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = cpu::make_cpu_backend(4);
};

TEST_F(OpsRows, EmbeddingRowsFromABf16TableAreExact) {
  const int64_t vocab = 50, hidden = 64;
  const Values table = testing::random_bf16(1, vocab * hidden, -3, 3);
  const std::vector<int32_t> ids = {0, 7, 49, 7, 13, 2};
  DeviceTensor table_tensor = testing::device_bf16(*backend, table, {vocab, hidden});
  DeviceTensor id_tensor = testing::device_i32(*backend, ids);
  DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {6, hidden});
  const Weight weight = Weight::make_dense("embed_tokens", table_tensor.view);
  const float scale = std::sqrt(3840.0f);
  ASSERT_TRUE(embed_rows(*backend, id_tensor.view, weight, scale, out.view).ok());
  testing::expect_bf16_exact("embed_rows bf16", testing::download_values(*backend, out.view),
                             reference::embed_rows(ids, table, hidden, scale));
}

TEST_F(OpsRows, EmbeddingRowsFromAnAffineTableAreExact) {
  const int64_t vocab = 40, hidden = 128;
  for (int bits : kAffineBits) {
    const Values source = testing::random_bf16(static_cast<uint64_t>(bits), vocab * hidden, -1, 1);
    std::vector<float> w(source.begin(), source.end());
    AffineTensor quantized = affine_quantize(w, vocab, hidden, bits, 64);
    const int64_t words = affine_row_words(hidden, bits);
    DeviceTensor packed =
        testing::device_tensor(*backend, DType::u32, {vocab, words}, quantized.packed.data());
    DeviceTensor scales = testing::device_tensor(*backend, DType::bf16, {vocab, 2}, quantized.scales.data());
    DeviceTensor biases = testing::device_tensor(*backend, DType::bf16, {vocab, 2}, quantized.biases.data());
    const Weight weight =
        Weight::make_affine("embed_tokens", hidden, packed.view, scales.view, biases.view, bits, 64);
    const std::vector<int32_t> ids = {39, 0, 5, 5};
    DeviceTensor id_tensor = testing::device_i32(*backend, ids);
    DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {4, hidden});
    ASSERT_TRUE(embed_rows(*backend, id_tensor.view, weight, std::sqrt(5376.0f), out.view).ok());
    testing::expect_bf16_exact(
        fmt::format("embed_rows affine {} bits", bits), testing::download_values(*backend, out.view),
        reference::embed_rows(ids, reference::weight_values(weight), hidden, std::sqrt(5376.0)));
  }
}

// Rows at magnitudes 2^-6 .. 2^6 so the norm's scale matters.
Values spread_rows(uint64_t seed, int64_t rows, int64_t dim) {
  Values x = testing::random_bf16(seed, rows * dim, -1, 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < dim; ++k)
      x[r * dim + k] = std::ldexp(x[r * dim + k], static_cast<int>(r % 13) - 6);
  return x;
}

TEST_F(OpsRows, RmsNormWeightedAndWeightlessMatchTheReference) {
  for (const bool weighted : {true, false}) {
    for (const int64_t dim : {64, 256, 3840}) {
      const int64_t rows = 13;
      const Values x = spread_rows(static_cast<uint64_t>(dim), rows, dim);
      const Values w = weighted ? testing::random_bf16(5, dim, -2, 2) : Values{};
      DeviceTensor x_tensor = testing::device_bf16(*backend, x, {rows, dim});
      DeviceTensor w_tensor = testing::device_bf16(*backend, weighted ? w : Values(dim, 1.0), {dim});
      DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {rows, dim});
      ASSERT_TRUE(
          rms_norm(*backend, x_tensor.view, weighted ? &w_tensor.view : nullptr, 1e-6f, out.view).ok());
      const Values expected = reference::rms_norm(x, w, dim, 1e-6);
      // fp32: a dim-long sum of squares (16 lanes), sqrt, divide and two products.
      const double relative = (static_cast<double>(dim) / 16 + 24) * std::ldexp(1.0, -24);
      testing::expect_bf16_close(
          fmt::format("rms_norm dim {} weighted {}", dim, weighted),
          testing::download_values(*backend, out.view), expected,
          [&](size_t k) { return relative * std::abs(expected[k]); }, 0.98);
    }
  }
}

TEST_F(OpsRows, PerHeadRmsNormRunsInPlace) {
  const int64_t rows = 5, heads = 4, dim = 32;
  const Values x = spread_rows(9, rows, heads * dim);
  const Values w = testing::random_bf16(10, dim, 0, 2);
  DeviceTensor x_tensor = testing::device_bf16(*backend, x, {rows, heads, dim});
  DeviceTensor w_tensor = testing::device_bf16(*backend, w, {dim});
  ASSERT_TRUE(rms_norm(*backend, x_tensor.view, &w_tensor.view, 1e-6f, x_tensor.view).ok());
  const Values expected = reference::rms_norm(x, w, dim, 1e-6);
  testing::expect_bf16_close(
      "per-head rms_norm in place", testing::download_values(*backend, x_tensor.view), expected,
      [&](size_t k) { return 30 * std::ldexp(1.0, -24) * std::abs(expected[k]); }, 0.98);
}

void check_norm_rope(Backend& backend, const RopeSpec& rope, int64_t heads,
                     const std::vector<int32_t>& positions) {
  const int64_t rows = static_cast<int64_t>(positions.size()), dim = rope.head_dim;
  const Values x = spread_rows(static_cast<uint64_t>(dim + heads), rows, heads * dim);
  const Values w = testing::random_bf16(11, dim, -1.5, 1.5);
  DeviceTensor x_tensor = testing::device_bf16(backend, x, {rows, heads, dim});
  DeviceTensor w_tensor = testing::device_bf16(backend, w, {dim});
  DeviceTensor position_tensor = testing::device_i32(backend, positions);
  DeviceTensor out = testing::device_zeros(backend, DType::bf16, {rows, heads, dim});
  ASSERT_TRUE(
      norm_rope(backend, x_tensor.view, &w_tensor.view, 1e-6f, position_tensor.view, rope, out.view).ok());
  const std::vector<float> inv_freq = rope_inv_freq(rope);
  const Values expected = reference::norm_rope(x, w, rows, heads, dim, 1e-6, positions, inv_freq);
  Values normed = reference::rms_norm(x, w, dim, 1e-6);
  // A flip of the normed value or of cos/sin at their bf16 rounding moves each product by about one bf16
  // step.
  const auto slack = [&](size_t k) {
    const size_t in_head = k % static_cast<size_t>(dim), half = static_cast<size_t>(dim / 2);
    const size_t partner = in_head < half ? k + half : k - half;
    return std::ldexp(1.0, -6) * (std::abs(normed[k]) + std::abs(normed[partner]));
  };
  testing::expect_bf16_close(fmt::format("norm_rope dim {} partial {}", dim, rope.partial_rotary_factor),
                             testing::download_values(backend, out.view), expected, slack, 0.97);
}

TEST_F(OpsRows, NormRopeDefaultMatchesTheReference) {
  check_norm_rope(*backend, {10000.0, 64, 1.0, 1.0}, 4, {0, 1, 2, 3, 17, 1023, 4096, 131071});
}

TEST_F(OpsRows, NormRopeProportionalMatchesTheReferenceAndPassesUnrotatedPairs) {
  const RopeSpec rope{1e6, 128, 0.25, 1.0};
  const std::vector<float> inv_freq = rope_inv_freq(rope);
  for (size_t i = 0; i < inv_freq.size(); ++i) EXPECT_EQ(inv_freq[i] == 0.0f, i >= 16) << "pair " << i;
  const double pair_one = 1.0 / std::pow(1e6, 2.0 / 128);  // the exponent runs over the full head_dim
  EXPECT_NEAR(inv_freq[1], pair_one, pair_one * std::ldexp(1.0, -22));
  check_norm_rope(*backend, rope, 2, {0, 5, 999, 262143});
}

}  // namespace
}  // namespace plumb::ops

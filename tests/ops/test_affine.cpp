// MLX affine packing: round trips for every width and group, MLX's own byte formulas, the quantizer's error
// and exact dequantization against the bit-by-bit reference.
#include <random>

#include "ops/affine.hpp"
#include "ops_test_util.hpp"

namespace plumb::ops {
namespace {

std::vector<uint8_t> random_codes(uint64_t seed, size_t count, int bits) {
  std::mt19937_64 engine(seed);
  std::vector<uint8_t> codes(count);
  for (uint8_t& code : codes) code = static_cast<uint8_t>(engine() & ((1u << bits) - 1u));
  return codes;
}

TEST(Affine, PackThenReadGivesEveryCodeForEveryWidthAndGroup) {
  for (int bits : kAffineBits) {
    for (int group : kAffineGroups) {
      const int64_t in = 3 * group;
      const std::vector<uint8_t> codes = random_codes(static_cast<uint64_t>(bits * 1000 + group), in, bits);
      std::vector<uint32_t> row(static_cast<size_t>(affine_row_words(in, bits)));
      affine_pack_row(codes, bits, row);
      for (int64_t j = 0; j < in; ++j)
        ASSERT_EQ(affine_code(row.data(), j, bits), codes[static_cast<size_t>(j)])
            << "bits " << bits << " group " << group << " index " << j;
    }
  }
}

TEST(Affine, ReadMatchesMlxByteFormulasForThreeFiveAndSixBits) {
  std::mt19937_64 engine(7);
  std::vector<uint32_t> words(15);
  for (uint32_t& word : words) word = static_cast<uint32_t>(engine());
  const auto* b = reinterpret_cast<const uint8_t*>(words.data());
  // MLX extract_bits: 3 bits, 8 values per 3 bytes.
  const uint32_t three[8] = {b[0] & 7u,        (b[0] >> 3) & 7u, ((b[0] >> 6) & 3u) | ((b[1] & 1u) << 2),
                             (b[1] >> 1) & 7u, (b[1] >> 4) & 7u, ((b[1] >> 7) & 1u) | ((b[2] & 3u) << 1),
                             (b[2] >> 2) & 7u, (b[2] >> 5) & 7u};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(affine_code(words.data(), j, 3), three[j]) << "3-bit index " << j;
  // 5 bits, 8 values per 5 bytes.
  const uint32_t five[8] = {b[0] & 31u,
                            ((b[0] >> 5) & 7u) | ((b[1] & 3u) << 3),
                            (b[1] >> 2) & 31u,
                            ((b[1] >> 7) & 1u) | ((b[2] & 15u) << 1),
                            ((b[2] >> 4) & 15u) | ((b[3] & 1u) << 4),
                            (b[3] >> 1) & 31u,
                            ((b[3] >> 6) & 3u) | ((b[4] & 7u) << 2),
                            (b[4] >> 3) & 31u};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(affine_code(words.data(), j, 5), five[j]) << "5-bit index " << j;
  // 6 bits, 4 values per 3 bytes.
  const uint32_t six[4] = {b[0] & 63u, ((b[0] >> 6) & 3u) | ((b[1] & 15u) << 2),
                           ((b[1] >> 4) & 15u) | ((b[2] & 3u) << 4), (b[2] >> 2) & 63u};
  for (int j = 0; j < 4; ++j) EXPECT_EQ(affine_code(words.data(), j, 6), six[j]) << "6-bit index " << j;
}

TEST(Affine, QuantizedWeightsDequantizeWithinOneStepOfTheOriginal) {
  const int64_t out = 3;
  for (int bits : kAffineBits) {
    for (int group : kAffineGroups) {
      const int64_t in = 2 * group;
      const testing::Values source =
          testing::random_bf16(static_cast<uint64_t>(bits + group), out * in, -0.5, 0.3);
      std::vector<float> w(source.begin(), source.end());
      const AffineTensor quantized = affine_quantize(w, out, in, bits, group);
      std::vector<float> restored(static_cast<size_t>(in));
      for (int64_t r = 0; r < out; ++r) {
        affine_dequantize_row(quantized.packed.data() + r * affine_row_words(in, bits),
                              quantized.scales.data() + r * (in / group),
                              quantized.biases.data() + r * (in / group), in, bits, group, restored.data());
        for (int64_t j = 0; j < in; ++j) {
          const double scale =
              std::abs(bf16_to_f32(quantized.scales[static_cast<size_t>(r * (in / group) + j / group)]));
          const double original = w[static_cast<size_t>(r * in + j)];
          const double bound = scale + 2 * testing::bf16_ulp(original) + 1e-6;
          ASSERT_LE(std::abs(restored[static_cast<size_t>(j)] - original), bound)
              << "bits " << bits << " group " << group << " row " << r << " index " << j << " expected "
              << original << " got " << restored[static_cast<size_t>(j)];
        }
      }
    }
  }
}

TEST(Affine, DequantizedRowsEqualTheBitByBitReferenceExactly) {
  const int64_t out = 4;
  for (int bits : kAffineBits) {
    for (int group : kAffineGroups) {
      const int64_t in = 2 * group;
      const testing::Values source =
          testing::random_bf16(static_cast<uint64_t>(3 * bits + group), out * in, -2, 2);
      std::vector<float> w(source.begin(), source.end());
      AffineTensor quantized = affine_quantize(w, out, in, bits, group);
      const int64_t words = affine_row_words(in, bits);
      const Weight weight = Weight::make_affine(
          "layer.proj", in, TensorView::contiguous(quantized.packed.data(), DType::u32, {out, words}),
          TensorView::contiguous(quantized.scales.data(), DType::bf16, {out, in / group}),
          TensorView::contiguous(quantized.biases.data(), DType::bf16, {out, in / group}), bits, group);
      ASSERT_TRUE(check_weight("test", weight).ok());
      const testing::Values expected = reference::weight_values(weight);
      std::vector<float> row(static_cast<size_t>(in));
      for (int64_t r = 0; r < out; ++r) {
        affine_dequantize_row(quantized.packed.data() + r * words, quantized.scales.data() + r * (in / group),
                              quantized.biases.data() + r * (in / group), in, bits, group, row.data());
        for (int64_t j = 0; j < in; ++j)
          ASSERT_EQ(row[static_cast<size_t>(j)], expected[static_cast<size_t>(r * in + j)])
              << "bits " << bits << " group " << group << " row " << r << " index " << j;
      }
    }
  }
}

}  // namespace
}  // namespace plumb::ops

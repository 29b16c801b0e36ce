// MLX affine packing (LSB-first bit streams) and the quantizer used for test checkpoints.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/half.hpp"
#include "models/gemma4/quantization.hpp"

namespace plumb::gemma4 {
namespace {

TEST(Gemma4Affine, PackThenUnpackEveryWidth) {
  std::mt19937 random(3);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    const int64_t in = 128;
    std::vector<uint8_t> values(in);
    for (auto& value : values) value = static_cast<uint8_t>(random() % (1u << bits));
    std::vector<uint32_t> words(static_cast<size_t>(packed_words(in, bits)));
    pack_row(values, bits, words);
    for (int64_t i = 0; i < in; ++i)
      ASSERT_EQ(unpack_element(words, bits, i), values[static_cast<size_t>(i)])
          << "bits " << bits << " index " << i;
  }
}

TEST(Gemma4Affine, ThreeBitLayoutMatchesMlxBytes) {
  // MLX packs 8 three-bit values into 3 bytes; value 2 is (b0 >> 6) | (b1 & 1) << 2, value 5 is (b1 >> 7) |
  // (b2 & 3) << 1.
  const std::vector<uint8_t> values = {1, 2, 5, 7, 0, 6, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1,
                                       1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<uint32_t> words(static_cast<size_t>(packed_words(32, 3)));
  pack_row(values, 3, words);
  uint8_t bytes[12];
  std::memcpy(bytes, words.data(), sizeof(bytes));
  EXPECT_EQ((bytes[0] & 0x7), 1);
  EXPECT_EQ(((bytes[0] >> 6) | ((bytes[1] & 1) << 2)), 5);
  EXPECT_EQ(((bytes[1] >> 7) | ((bytes[2] & 3) << 1)), 6);
  EXPECT_EQ(((bytes[2] & 0xe0) >> 5), 4);
}

TEST(Gemma4Affine, QuantizerErrsByAtMostOneStep) {
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int group : {32, 64, 128}) {
      std::vector<float> row(256);
      for (float& w : row) w = round_bf16(normal(random));
      std::vector<uint32_t> words(static_cast<size_t>(packed_words(256, bits)));
      std::vector<uint16_t> scales(256 / group), biases(256 / group);
      quantize_row(row, bits, group, words, scales, biases);
      // The edge of larger magnitude is each group's bias, at level 0: it comes back exactly.
      for (size_t g = 0; g < scales.size(); ++g) {
        const auto first = row.begin() + static_cast<std::ptrdiff_t>(g) * group;
        const float low = *std::min_element(first, first + group),
                    high = *std::max_element(first, first + group);
        const float edge = std::fabs(low) > std::fabs(high) ? low : high;  // a tie keeps the maximum
        EXPECT_EQ(bf16_to_f32(biases[g]), edge)
            << "bits " << bits << " group " << group << " group index " << g;
      }
      for (size_t i = 0; i < row.size(); ++i) {
        const size_t g = i / static_cast<size_t>(group);
        const float step = std::fabs(bf16_to_f32(scales[g]));
        const uint32_t q = unpack_element(words, bits, static_cast<int64_t>(i));
        const float back = bf16_to_f32(dequantize_element(q, scales[g], biases[g]));
        // Rounding to a level costs half a step; keeping the larger edge exact rescales the step by
        // edge / round(edge / step), which can leave the far edge up to half a step further (at 2 bits); then
        // the bf16 rounding of the scale over up to 2^bits levels and of the result.
        const float bound = step + step * 0x1p-8f * static_cast<float>(1 << bits) + std::fabs(back) * 0x1p-8f;
        ASSERT_LE(std::fabs(back - row[i]), bound) << "bits " << bits << " group " << group << " index " << i
                                                   << " expected " << row[i] << " got " << back;
      }
    }
  }
}

TEST(Gemma4Affine, DequantizeRoundsOnceFromFloat) {
  const uint16_t scale = f32_to_bf16(0.0078125f), bias = f32_to_bf16(-1.0f);
  EXPECT_EQ(bf16_to_f32(dequantize_element(3, scale, bias)), round_bf16(3 * 0.0078125f - 1.0f));
  EXPECT_EQ(bf16_to_f32(dequantize_element(0, scale, bias)), -1.0f);
}

}  // namespace
}  // namespace plumb::gemma4

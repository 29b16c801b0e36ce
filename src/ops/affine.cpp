#include "ops/affine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace plumb::ops {

bool affine_bits_supported(int bits) {
  return std::find(std::begin(kAffineBits), std::end(kAffineBits), bits) != std::end(kAffineBits);
}

bool affine_group_supported(int group) {
  return std::find(std::begin(kAffineGroups), std::end(kAffineGroups), group) != std::end(kAffineGroups);
}

void affine_pack_row(std::span<const uint8_t> codes, int bits, std::span<uint32_t> row) {
  PLUMB_ASSERT(static_cast<int64_t>(row.size()) == affine_row_words(static_cast<int64_t>(codes.size()), bits),
               "packed row size matches the code count");
  std::fill(row.begin(), row.end(), 0u);
  for (size_t j = 0; j < codes.size(); ++j) {
    const uint64_t bit = j * static_cast<uint64_t>(bits);
    const uint64_t code = codes[j] & ((1u << bits) - 1u);
    const size_t word = bit / 32;
    const unsigned shift = bit % 32;
    row[word] |= static_cast<uint32_t>(code << shift);
    if (shift + bits > 32) row[word + 1] |= static_cast<uint32_t>(code >> (32 - shift));
  }
}

namespace {

// One group: returns its bf16 scale and bias and writes its codes.
void quantize_group(const float* w, int group, int bits, uint8_t* codes, uint16_t* scale_out,
                    uint16_t* bias_out) {
  const float levels = static_cast<float>((1 << bits) - 1);
  float w_min = std::numeric_limits<float>::infinity();
  float w_max = -w_min;
  for (int j = 0; j < group; ++j) {
    w_min = std::min(w_min, w[j]);
    w_max = std::max(w_max, w[j]);
  }
  const bool low_edge = std::abs(w_min) > std::abs(w_max);
  float scale = std::max((w_max - w_min) / levels, 1e-7f);
  scale = low_edge ? scale : -scale;
  const float edge = low_edge ? w_min : w_max;
  const float q0 = std::rint(edge / scale);
  float bias = 0.0f;
  if (q0 != 0.0f) {
    scale = edge / q0;
    bias = edge;
  }
  for (int j = 0; j < group; ++j) {
    const float q = std::min(std::max(std::rint((w[j] - bias) / scale), 0.0f), levels);
    codes[j] = static_cast<uint8_t>(q);
  }
  *scale_out = f32_to_bf16(scale);
  *bias_out = f32_to_bf16(bias);
}

}  // namespace

AffineTensor affine_quantize(std::span<const float> w, int64_t out, int64_t in, int bits, int group) {
  PLUMB_ASSERT(
      affine_bits_supported(bits) && affine_group_supported(group) && in % group == 0 && in % 32 == 0,
      "supported affine bits and group");
  PLUMB_ASSERT(static_cast<int64_t>(w.size()) == out * in, "weight size matches its shape");
  AffineTensor result;
  const int64_t words = affine_row_words(in, bits);
  const int64_t groups = in / group;
  result.packed.resize(static_cast<size_t>(out * words));
  result.scales.resize(static_cast<size_t>(out * groups));
  result.biases.resize(static_cast<size_t>(out * groups));
  std::vector<uint8_t> codes(static_cast<size_t>(in));
  for (int64_t r = 0; r < out; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      quantize_group(w.data() + r * in + g * group, group, bits, codes.data() + g * group,
                     &result.scales[static_cast<size_t>(r * groups + g)],
                     &result.biases[static_cast<size_t>(r * groups + g)]);
    }
    affine_pack_row(
        codes, bits,
        std::span(result.packed).subspan(static_cast<size_t>(r * words), static_cast<size_t>(words)));
  }
  return result;
}

void affine_dequantize_row(const uint32_t* packed_row, const uint16_t* scales_row, const uint16_t* biases_row,
                           int64_t in, int bits, int group, float* values) {
  if (32 % bits == 0) {
    // 2, 4 and 8 bits: whole codes per word, and each group spans whole words.
    const int per_word = 32 / bits;
    const uint32_t word_mask = (1u << bits) - 1u;
    for (int64_t first = 0; first < in; first += group) {
      const float scale = bf16_to_f32(scales_row[first / group]);
      const float bias = bf16_to_f32(biases_row[first / group]);
      for (int64_t j = first; j < first + group; j += per_word) {
        const uint32_t word = packed_row[j / per_word];
        for (int k = 0; k < per_word; ++k)
          values[j + k] = round_bf16(scale * static_cast<float>((word >> (k * bits)) & word_mask) + bias);
      }
    }
    return;
  }
  // 3, 5 and 6 bits: stream the row's bits through a 64-bit buffer, a word at a time.
  const uint64_t mask = (1u << bits) - 1u;
  uint64_t buffer = 0;
  int held = 0;
  const uint32_t* next_word = packed_row;
  for (int64_t first = 0; first < in; first += group) {
    const float scale = bf16_to_f32(scales_row[first / group]);
    const float bias = bf16_to_f32(biases_row[first / group]);
    for (int64_t j = first; j < first + group; ++j) {
      if (held < bits) {
        buffer |= static_cast<uint64_t>(*next_word++) << held;
        held += 32;
      }
      const auto code = static_cast<float>(buffer & mask);
      buffer >>= bits;
      held -= bits;
      values[j] = round_bf16(scale * code + bias);
    }
  }
}

}  // namespace plumb::ops

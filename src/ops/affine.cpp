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
  for (int64_t j = 0; j < in; ++j) {
    const int64_t g = j / group;
    values[j] = affine_value(scales_row[g], biases_row[g], affine_code(packed_row, j, bits));
  }
}

}  // namespace plumb::ops

#pragma once
// MLX affine quantization: each weight row is a little-endian bit stream, element j at bits [j*bits,
// j*bits+bits) (LSB first), packed in u32 words; group g of `group` inputs has a bf16 scale and bias, w =
// scale * q + bias.
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "core/half.hpp"

#if !defined(PLUMB_HD) && defined(__CUDACC__)
#define PLUMB_HD __host__ __device__ __forceinline__
#elif !defined(PLUMB_HD)
#define PLUMB_HD inline
#endif

namespace plumb::ops {

inline constexpr int kAffineBits[] = {2, 3, 4, 5, 6, 8};
inline constexpr int kAffineGroups[] = {32, 64, 128};

bool affine_bits_supported(int bits);
bool affine_group_supported(int group);
// u32 words per packed row of `in` elements; `in` must be a multiple of 32 (whole words for every width).
inline int64_t affine_row_words(int64_t in, int bits) {
  return in * bits / 32;
}

// The code of element j of a packed row.
inline uint32_t affine_code(const uint32_t* row, int64_t j, int bits) {
  const int64_t bit = j * bits;
  const int64_t word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  uint64_t window = row[word] >> shift;
  if (shift + bits > 32) window |= static_cast<uint64_t>(row[word + 1]) << (32 - shift);
  return static_cast<uint32_t>(window & ((1u << bits) - 1u));
}

// The dequantized weight bf16(f32(scale * q + bias)); scale * q is exact in f32, so one f32 rounding of the
// sum.
inline float affine_value(uint16_t scale, uint16_t bias, uint32_t code) {
  return round_bf16(bf16_to_f32(scale) * static_cast<float>(code) + bf16_to_f32(bias));
}

// Whether one rounding of the exact scale * q + bias to bf16 (a packed bf16x2 fma) gives affine_value for
// every code of a group: when bias is 0 or |bias| >= 2^-15 |scale|, with scale and bias away from the
// subnormal and overflow ranges. The two roundings of affine_value (f32, then bf16) differ from one only
// where scale * q is a bf16 midpoint and 0 < |bias| < 2^-24 |scale * q| (tests/ops/test_affine_rounding.cpp
// enumerates it).
inline bool affine_single_rounding_exact(float scale, float bias) {
  const float s = std::fabs(scale), b = std::fabs(bias);
  const bool in_range = s >= 0x1p-100f && s < 0x1p100f && b < 0x1p100f;
  return in_range && (b == 0.0f || b >= s * 0x1p-15f);
}

// affine_single_rounding_exact on the bits of scale | bias << 16, as the CUDA decode matmul tests it:
// magnitudes of bf16 order as their bits, and |scale| * 2^-15 is the scale's bits less 15 << 7 (its exponent
// is at least 27 wherever the test gets that far). Equal to the float form for every pair
// (tests/ops/test_affine_rounding.cpp).
PLUMB_HD bool affine_single_rounding_exact_bits(uint32_t scale_bias) {
  const uint32_t s = scale_bias & 0x7fffu, b = scale_bias >> 16 & 0x7fffu;
  return s >= 0x0d80u && s < 0x7180u && b < 0x7180u && (b == 0u || b + 0x0780u >= s);
}

// Packs codes (each < 2^bits) into a row of affine_row_words(codes.size(), bits) words.
void affine_pack_row(std::span<const uint8_t> codes, int bits, std::span<uint32_t> row);

struct AffineTensor {
  std::vector<uint32_t> packed;  // [out, in * bits / 32]
  std::vector<uint16_t> scales;  // bf16 [out, in / group]
  std::vector<uint16_t> biases;  // bf16 [out, in / group]
};

// Quantizes w [out, in] (f32 values) with MLX's rule: scale = max((max - min) / (2^bits - 1), 1e-7) signed
// toward the larger-magnitude edge, which becomes the bias and is hit exactly; q = clamp(rint((w - bias) /
// scale)). Scales and biases are stored as bf16.
AffineTensor affine_quantize(std::span<const float> w, int64_t out, int64_t in, int bits, int group);

// Dequantizes one row [in] to f32 values that are bf16-representable.
void affine_dequantize_row(const uint32_t* packed_row, const uint16_t* scales_row, const uint16_t* biases_row,
                           int64_t in, int bits, int group, float* values);

}  // namespace plumb::ops

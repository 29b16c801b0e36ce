#pragma once
// bf16 and f16 <-> f32, round to nearest even: quiet NaN kept (sign and top payload bits), subnormals exact,
// signed zeros kept, overflow to infinity. Bit-exact with the IEEE conversions used by PyTorch and CUDA.
#include <bit>
#include <cstdint>

namespace plumb {

struct bf16 {
  uint16_t bits;
};
struct f16 {
  uint16_t bits;
};

inline float bf16_to_f32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t f32_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t bias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + bias) >> 16);
}

// Rounds through bf16 and back: the value a bf16 activation holds.
inline float round_bf16(float value) {
  return bf16_to_f32(f32_to_bf16(value));
}

inline float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal f16: normalise into an f32 exponent.
  int shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  const uint32_t f32_exponent = static_cast<uint32_t>(113 - shift);
  return std::bit_cast<float>(sign | (f32_exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

inline uint16_t f32_to_f16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= -14) {
    // Normal f16: drop 13 mantissa bits with round to nearest even; a carry may bump the exponent.
    const uint32_t rebased = magnitude - (112u << 23);
    const uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal
  // Subnormal f16: the implicit bit joins the mantissa, shifted right by 126 - biased exponent - ... bits.
  const uint32_t full = (magnitude & 0x7fffffu) | 0x800000u;
  const int shift = -exponent - 14 + 13;  // 14..24
  const uint32_t kept = full >> shift;
  const uint32_t rest = full & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t round_up = (rest > half || (rest == half && (kept & 1u))) ? 1u : 0u;
  return static_cast<uint16_t>(sign | (kept + round_up));
}

}  // namespace plumb

#pragma once
// The keyed draw (DESIGN.md §2) in integer steps, shared by the host (CPU backend, reference, engine) and the
// CUDA kernel. Each candidate's weight is a fixed-point integer and every threshold is an integer, so sums
// in any order give the same bits: a sort on the host and a radix select on the device draw the same id.
//
// For a row of logits l and options (temperature T, top_k, top_p, min_p), seed and position p:
//   1. T == 0 or top_k == 1, or no finite logit: the lowest id of the largest non-NaN logit (-1 if none).
//   2. Candidates are the finite logits, ranked by rank_key: logit descending (-0 as +0), id ascending.
//   3. w_i = floor(2^43 * exp_fixed((l_i - l_0) / T)) in double, 0 below kWeightFloor; w_0 = 2^43.
//   4. top_k > 0 keeps the first top_k candidates (K1); W1 = sum of their weights.
//   5. top_p < 1 keeps the shortest prefix of K1 whose weight reaches ceil(top_p * W1) (K2).
//   6. min_p > 0 keeps the candidates of K2 with w_i >= ceil(min_p * 2^43) (K3); W3 = their weight.
//   7. t = floor(b * W3 / 2^53) with b the top 53 bits of keyed_bits(seed, p); the draw is the first
//      candidate of K3 whose running weight exceeds t.
// Weights below 2^-43 of the top candidate's are 0 and never drawn (their total mass is below 2^-25).
#include <cstdint>

#if defined(__CUDACC__)
#define PLUMB_HD __host__ __device__ __forceinline__
#else
#define PLUMB_HD inline
#endif

namespace plumb::ops {

// One logits row's draw options; 32 bytes, uploaded as-is for the device.
struct SampleParams {
  float temperature = 0.0f;
  float top_p = 1.0f;
  float min_p = 0.0f;
  int32_t top_k = 0;
  uint64_t seed = 0;
  int64_t position = 0;  // the absolute position the drawn token will occupy
};
static_assert(sizeof(SampleParams) == 32);

namespace keyed {

inline constexpr int kWeightBits = 43;  // w_0 = 2^43; a row of 2^20 weights sums below 2^63
inline constexpr int64_t kMaxWidth = int64_t{1} << 20;
inline constexpr double kWeightFloor = -40.0;  // exp(-40) * 2^43 < 1: weights below are 0 anyway

// splitmix64's finalizer: a bijective 64-bit mix.
PLUMB_HD uint64_t mix64(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

// The random bits for absolute position p: counter based, no state carried between draws.
PLUMB_HD uint64_t keyed_bits(uint64_t seed, int64_t position) {
  return mix64(mix64(seed) ^ mix64(static_cast<uint64_t>(position) + 1u));
}

PLUMB_HD uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  return __builtin_bit_cast(uint32_t, value);
#endif
}

// Orders candidates: a larger key ranks first. High half: the logit's bits made monotone (-0 as +0); low
// half: ~id, so equal logits rank by id ascending. Keys of distinct ids differ.
PLUMB_HD uint64_t rank_key(float logit, uint32_t id) {
  const uint32_t bits = float_bits(logit + 0.0f);  // -0 + 0 == +0
  const uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (static_cast<uint64_t>(ordered) << 32) | (0xffffffffu - id);
}

PLUMB_HD uint32_t key_id(uint64_t key) {
  return 0xffffffffu - static_cast<uint32_t>(key);
}

// The logit a key was made from (-0 comes back as +0).
PLUMB_HD float key_logit(uint64_t key) {
  const auto ordered = static_cast<uint32_t>(key >> 32);
  const uint32_t bits = (ordered & 0x80000000u) ? (ordered & 0x7fffffffu) : ~ordered;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  return __builtin_bit_cast(float, bits);
#endif
}

// exp(d) for kWeightFloor <= d <= 0: d = k ln2 + r with |r| <= ln2 / 2, Taylor to degree 13 in r by Horner,
// times 2^k. Only IEEE double + and * (built without contraction), so host and device agree bit for bit.
PLUMB_HD double exp_fixed(double d) {
  constexpr double kInvLn2 = 1.4426950408889634;
  constexpr double kLn2High = 0.693145751953125;  // ln 2 to 17 bits: k * kLn2High is exact for |k| < 64
  constexpr double kLn2Low = 1.4286068203094173e-06;
  const double k = static_cast<double>(static_cast<int64_t>(d * kInvLn2 - 0.5));  // round half down, d <= 0
  const double r = (d - k * kLn2High) - k * kLn2Low;
  double sum = 1.0 / 6227020800.0;  // 1/13!
  constexpr double kInverseFactorials[] = {1.0 / 479001600.0,
                                           1.0 / 39916800.0,
                                           1.0 / 3628800.0,
                                           1.0 / 362880.0,
                                           1.0 / 40320.0,
                                           1.0 / 5040.0,
                                           1.0 / 720.0,
                                           1.0 / 120.0,
                                           1.0 / 24.0,
                                           1.0 / 6.0,
                                           0.5,
                                           1.0,
                                           1.0};
  for (double c : kInverseFactorials) sum = sum * r + c;
  // 2^k from its bits (k >= -58: a normal double), an exact scaling.
  const uint64_t scale_bits = static_cast<uint64_t>(1023 + static_cast<int64_t>(k)) << 52;
#if defined(__CUDA_ARCH__)
  const double scale = __longlong_as_double(static_cast<long long>(scale_bits));
#else
  const double scale = __builtin_bit_cast(double, scale_bits);
#endif
  return sum * scale;
}

// w_i for the scaled gap d = (l_i - l_0) / T <= 0.
PLUMB_HD uint64_t weight(double gap) {
  if (!(gap >= kWeightFloor)) return 0;
  return static_cast<uint64_t>(exp_fixed(gap) * static_cast<double>(uint64_t{1} << kWeightBits));
}

// The scaled gap of logit l to the top candidate's logit l_0, in double.
PLUMB_HD double gap(float logit, float top, float temperature) {
  return (static_cast<double>(logit) - static_cast<double>(top)) / static_cast<double>(temperature);
}

// a * b as 128 bits, from 32-bit halves (no __int128: the same code on the host and the device).
struct Wide {
  uint64_t high, low;
};
PLUMB_HD Wide multiply(uint64_t a, uint64_t b) {
  const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t middle = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  return {p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32), (middle << 32) | (p00 & 0xffffffffu)};
}

// floor(value / 2^shift) for 0 < shift < 128 (must fit 64 bits), and whether bits were dropped.
PLUMB_HD uint64_t shift_down(Wide value, int shift, bool* dropped) {
  if (shift >= 64) {
    const int s = shift - 64;
    *dropped = value.low != 0 || (s > 0 && (value.high & ((uint64_t{1} << s) - 1u)) != 0);
    return value.high >> s;
  }
  *dropped = (value.low & ((uint64_t{1} << shift) - 1u)) != 0;
  return (value.high << (64 - shift)) | (value.low >> shift);
}

// ceil(total * fraction) for 0 <= fraction <= 1, exactly: fraction = m * 2^-s with m < 2^24, s >= 24.
PLUMB_HD uint64_t ceil_fraction(uint64_t total, float fraction) {
  if (!(fraction > 0.0f)) return 0;
  if (fraction >= 1.0f) return total;
  const uint32_t bits = float_bits(fraction);
  const int exponent = static_cast<int>((bits >> 23) & 0xffu);
  uint64_t mantissa = bits & 0x7fffffu;
  int shift = 149;  // a subnormal's value is mantissa * 2^-149
  if (exponent > 0) {
    mantissa |= 0x800000u;
    shift = 150 - exponent;  // value = mantissa * 2^(exponent - 150)
  }
  const Wide product = multiply(total, mantissa);
  if (shift >= 128) return (product.high | product.low) == 0 ? 0 : 1;
  bool dropped = false;
  const uint64_t floor = shift_down(product, shift, &dropped);
  return floor + (dropped ? 1u : 0u);
}

// t = floor(b * total / 2^53), b the top 53 bits of the keyed bits: always below total.
PLUMB_HD uint64_t draw_target(uint64_t total, uint64_t seed, int64_t position) {
  bool dropped = false;
  return shift_down(multiply(keyed_bits(seed, position) >> 11, total), 53, &dropped);
}

// True when the options ask for the largest logit rather than a draw.
PLUMB_HD bool greedy(const SampleParams& params) {
  return params.temperature == 0.0f || params.top_k == 1;
}

}  // namespace keyed
}  // namespace plumb::ops

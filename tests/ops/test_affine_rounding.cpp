// affine_single_rounding_exact, checked by enumeration: for scales with exponent 0 (the rounding is the same
// for scale and bias scaled by any power of two inside the normal range), every code below 2^bits and every
// bias with an exponent within 2^-30 .. 2^30 of the scale, one rounding of the exact scale * q + bias to bf16
// equals affine_value's two (f32, then bf16) wherever the predicate holds, and differs somewhere it does not.
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "core/half.hpp"
#include "ops/affine.hpp"

namespace plumb::ops {
namespace {

// A bf16 value as mantissa * 2^exponent with an 8-bit integer mantissa (0 for zero). With the exponents
// enumerated below, the exact sums fit 52 bits.
void split(float value, int64_t& mantissa, int& exponent) {
  int e = 0;
  const double fraction = std::frexp(static_cast<double>(value), &e);
  mantissa = static_cast<int64_t>(std::ldexp(fraction, 8));
  exponent = e - 8;
}

// The exact value mantissa * 2^exponent rounded once to 8 significant bits, to nearest even, as f32.
float round_once_bf16(int64_t mantissa, int exponent) {
  if (mantissa == 0) return 0.0f;
  const bool negative = mantissa < 0;
  if (negative) mantissa = -mantissa;
  int width = 0;
  for (int64_t t = mantissa; t != 0; t >>= 1) ++width;
  if (const int drop = width - 8; drop > 0) {
    const int64_t half = int64_t{1} << (drop - 1), rest = mantissa & ((int64_t{1} << drop) - 1);
    mantissa >>= drop;
    exponent += drop;
    if (rest > half || (rest == half && (mantissa & 1) != 0)) mantissa += 1;
  }
  const double value = std::ldexp(static_cast<double>(mantissa), exponent);
  return static_cast<float>(negative ? -value : value);
}

struct Count {
  int64_t checked = 0, exact_and_different = 0, inexact_and_different = 0;
};

Count enumerate(int bits) {
  Count count;
  for (uint32_t scale_mantissa = 0; scale_mantissa < 128; ++scale_mantissa) {
    const uint16_t scale = static_cast<uint16_t>((127u << 7) | scale_mantissa);
    const float s = bf16_to_f32(scale);
    int64_t ms = 0;
    int es = 0;
    split(s, ms, es);
    for (uint32_t sign = 0; sign < 2; ++sign)
      for (uint32_t exponent = 127 - 30; exponent <= 127 + 30; ++exponent)
        for (uint32_t mantissa = 0; mantissa < 128; ++mantissa) {
          const uint16_t bias = static_cast<uint16_t>(sign << 15 | exponent << 7 | mantissa);
          const float b = bf16_to_f32(bias);
          int64_t mb = 0;
          int eb = 0;
          split(b, mb, eb);
          const bool exact = affine_single_rounding_exact(s, b);
          for (uint32_t q = 0; q < (1u << bits); ++q) {
            const int e0 = std::min(es, eb);
            const int64_t sum = ((ms * q) << (es - e0)) + (mb << (eb - e0));
            const bool differ = round_once_bf16(sum, e0) != affine_value(scale, bias, q);
            ++count.checked;
            if (differ) ++(exact ? count.exact_and_different : count.inexact_and_different);
          }
        }
  }
  return count;
}

TEST(AffineRounding, OneRoundingEqualsTwoWhereThePredicateHolds) {
  for (int bits : {2, 3, 4, 5, 6}) {
    const Count count = enumerate(bits);
    EXPECT_EQ(count.exact_and_different, 0) << bits << " bits: " << count.checked << " checked";
    // The predicate is needed: some biases below 2^-15 |scale| do round differently.
    EXPECT_GT(count.inexact_and_different, 0) << bits << " bits";
  }
}

TEST(AffineRounding, ThePredicateRefusesTheSubnormalAndOverflowRanges) {
  EXPECT_TRUE(affine_single_rounding_exact(0.01f, -0.08f));
  EXPECT_TRUE(affine_single_rounding_exact(0.01f, 0.0f));
  EXPECT_TRUE(affine_single_rounding_exact(-0.01f, -0.0f));
  EXPECT_FALSE(affine_single_rounding_exact(1.0f, 0x1p-20f));
  EXPECT_FALSE(affine_single_rounding_exact(0x1p-110f, 0.0f));
  EXPECT_FALSE(affine_single_rounding_exact(0x1p110f, 1.0f));
  EXPECT_FALSE(affine_single_rounding_exact(1.0f, 0x1p110f));
}

// The bits form the CUDA decode matmul uses equals the float form for every magnitude pair (signs do not
// enter either); the device test CudaDequant.* checks the same over all 2^32 signed pairs on the GPU.
TEST(AffineRounding, TheBitsFormEqualsTheFloatFormForEveryPair) {
  int64_t allowed = 0;
  for (uint32_t s = 0; s < 0x8000u; ++s) {
    const float scale = bf16_to_f32(static_cast<uint16_t>(s));
    for (uint32_t b = 0; b < 0x8000u; ++b) {
      const bool by_bits = affine_single_rounding_exact_bits(s | b << 16);
      if (by_bits != affine_single_rounding_exact(scale, bf16_to_f32(static_cast<uint16_t>(b)))) {
        FAIL() << "scale bits " << s << ", bias bits " << b << ": expected "
               << affine_single_rounding_exact(scale, bf16_to_f32(static_cast<uint16_t>(b))) << ", got "
               << by_bits;
      }
      allowed += by_bits ? 1 : 0;
    }
  }
  EXPECT_GT(allowed, int64_t{1} << 27) << "the rule must allow the common pairs";
}

}  // namespace
}  // namespace plumb::ops

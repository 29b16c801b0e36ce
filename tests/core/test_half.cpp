// bf16 and f16 conversions, bit for bit, against references that round through exact double arithmetic.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "core/half.hpp"

namespace plumb {
namespace {

// Independent reference: the decoded value of a 16-bit pattern, in double.
double decode_bf16(uint16_t bits) {
  return static_cast<double>(std::bit_cast<float>(uint32_t{bits} << 16));
}

double decode_f16(uint16_t bits) {
  const int sign = (bits & 0x8000) ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0x1f) return mantissa ? std::nan("") : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Nearest-even among all finite patterns of one sign, searched by bisection over the ordered magnitudes.
template <class Decode>
uint16_t reference_round(float value, Decode decode, uint16_t max_finite, uint16_t infinity,
                         double overflow) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude >= overflow) return sign | infinity;
  uint16_t low = 0, high = max_finite;
  while (high - low > 1) {
    const uint16_t middle = static_cast<uint16_t>((low + high) / 2);
    (decode(middle) <= magnitude ? low : high) = middle;
  }
  if (decode(high) <= magnitude) low = high;
  if (low == max_finite) return sign | low;
  const double below = magnitude - decode(low);
  const double above = decode(static_cast<uint16_t>(low + 1)) - magnitude;
  if (below < above || (below == above && (low & 1) == 0)) return sign | low;
  return sign | static_cast<uint16_t>(low + 1);
}

uint16_t reference_bf16(float value) {
  // Overflow: at or past the midpoint between the largest finite bf16 and 2^128.
  return reference_round(value, decode_bf16, 0x7f7f, 0x7f80, std::ldexp(0x1ff, 119));
}

uint16_t reference_f16(float value) {
  return reference_round(value, decode_f16, 0x7bff, 0x7c00, 65520.0);
}

TEST(Bf16, EveryPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t pattern = static_cast<uint16_t>(bits);
    const float value = bf16_to_f32(pattern);
    const bool is_nan = (pattern & 0x7fff) > 0x7f80;
    const uint16_t expected = is_nan ? static_cast<uint16_t>(pattern | 0x0040) : pattern;
    ASSERT_EQ(f32_to_bf16(value), expected) << "pattern 0x" << std::hex << bits;
    if (!is_nan) {
      ASSERT_EQ(static_cast<double>(value), decode_bf16(pattern)) << "pattern 0x" << std::hex << bits;
    }
  }
}

TEST(F16, EveryPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t pattern = static_cast<uint16_t>(bits);
    const float value = f16_to_f32(pattern);
    const bool is_nan = (pattern & 0x7fff) > 0x7c00;
    if (is_nan) {
      ASSERT_TRUE(std::isnan(value)) << "pattern 0x" << std::hex << bits;
      ASSERT_EQ(f32_to_f16(value), pattern | 0x0200) << "pattern 0x" << std::hex << bits;
      continue;
    }
    ASSERT_EQ(static_cast<double>(value), decode_f16(pattern)) << "pattern 0x" << std::hex << bits;
    ASSERT_EQ(f32_to_f16(value), pattern) << "pattern 0x" << std::hex << bits;
  }
}

// Every f32 whose low bits sit at and around the rounding boundaries, over every exponent and sign.
TEST(Bf16AndF16, Fp32SweepMatchesReference) {
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x7fff, 0x8000,
                           0x8001, 0xbfff, 0xc000, 0xffff, 0x0800, 0x17ff, 0x1800, 0x3000};
  uint64_t checked = 0;
  for (uint32_t high = 0; high < 0x10000; ++high) {
    for (uint32_t low : lows) {
      const uint32_t bits = (high << 16) | low;
      const float value = std::bit_cast<float>(bits);
      if (std::isnan(value)) {
        ASSERT_EQ(f32_to_bf16(value), static_cast<uint16_t>((bits >> 16) | 0x40)) << std::hex << bits;
        continue;
      }
      ASSERT_EQ(f32_to_bf16(value), reference_bf16(value)) << "f32 bits 0x" << std::hex << bits;
      ASSERT_EQ(f32_to_f16(value), reference_f16(value)) << "f32 bits 0x" << std::hex << bits;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000000u);
}

TEST(Bf16AndF16, SpecialValues) {
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // overflows to infinity
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // signalling NaN comes back quiet
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0xff812345u)), 0xffc1);
}

}  // namespace
}  // namespace plumb

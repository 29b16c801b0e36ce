// Range arithmetic: rounding straight from double, fp32 steps, ulp allowances, sums exact when fp32 is exact,
// and ranges that hold every order an fp32 kernel may sum in.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "contract/span.hpp"
#include "core/half.hpp"

namespace plumb::contract {
namespace {

TEST(Span, RoundsToBf16FromDoubleWithoutDoubleRounding) {
  // 1 + 2^-8 is a bf16 tie (to 1.0, even); a hair above it must round up even though the f32 nearest to the
  // double is the tie itself.
  const double above_tie = 1.0 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(round_to_bf16_bits(above_tie), 0x3f81) << "value " << above_tie;
  EXPECT_EQ(round_to_bf16_bits(1.0 + 0x1p-8), 0x3f80);
  EXPECT_EQ(round_to_bf16_bits(1.0 + 0x1p-8 - 0x1p-40), 0x3f80);
  EXPECT_EQ(round_to_bf16_bits(-0.0), 0x8000);
  EXPECT_EQ(round_to_bf16_bits(1e39), 0x7f80);
  EXPECT_EQ(round_to_bf16_bits(-1e-50), 0x8000);
}

TEST(Span, RoundsEveryF32ValueLikeTheBitExactConversion) {
  std::mt19937 engine(7);
  for (int i = 0; i < 200000; ++i) {
    const auto bits = static_cast<uint32_t>(engine());
    const float value = std::bit_cast<float>(bits);
    if (std::isnan(value)) continue;
    ASSERT_EQ(round_to_bf16_bits(value), f32_to_bf16(value)) << "index " << i << " bits " << bits;
  }
}

TEST(Span, F32OverflowsLikeRoundToNearest) {
  EXPECT_EQ(round_f32(static_cast<double>(FLT_MAX) + 0x1p102), FLT_MAX);
  EXPECT_TRUE(std::isinf(round_f32(static_cast<double>(FLT_MAX) + 0x1p103)));
}

TEST(Span, OrdersNegativeZeroBelowPositiveZero) {
  EXPECT_LT(order_key(-0.0), order_key(0.0));
  EXPECT_LT(order_key(-1.0), order_key(-0.0));
  EXPECT_LT(order_key(0.0), order_key(0x1p-1074));
  EXPECT_TRUE(std::signbit(ordered_min(0.0, -0.0)));
}

TEST(Span, ExactSumIsOneValueInAnyOrder) {
  const std::vector<double> terms{0x1p20, 3.0, -0x1p20, -2.0, 7.0, 0.5};
  const Span sum = f32_sum(terms);
  EXPECT_TRUE(sum.single());
  EXPECT_EQ(sum.lo, 8.5);
}

TEST(Span, CancellingSumIsPositiveZero) {
  const Span sum = f32_sum(std::vector<double>{1.0, -1.0, -0.0});
  EXPECT_TRUE(sum.single());
  EXPECT_FALSE(std::signbit(sum.lo));
}

TEST(Span, SumOfNegativeZerosAllowsEitherZero) {
  const Span sum = f32_sum(std::vector<double>{-0.0, -0.0});
  EXPECT_TRUE(std::signbit(sum.lo));
  EXPECT_FALSE(std::signbit(sum.hi));
}

// Sums the terms in fp32 in several orders: every result must lie inside the range.
TEST(Span, InexactSumHoldsEveryOrder) {
  std::mt19937 engine(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> values(3000);
    for (float& v : values) v = normal(engine) * (trial % 5 == 0 ? 1e6f : 1.0f);
    std::vector<double> terms(values.begin(), values.end());
    const Span range = f32_sum(terms);
    for (int order = 0; order < 4; ++order) {
      if (order == 1) std::reverse(values.begin(), values.end());
      if (order >= 2) std::shuffle(values.begin(), values.end(), engine);
      float sum = 0.0f;
      for (float v : values) sum += v;
      ASSERT_LE(range.lo, sum) << "trial " << trial << " order " << order << " bound " << range.lo;
      ASSERT_GE(range.hi, sum) << "trial " << trial << " order " << order << " bound " << range.hi;
    }
  }
}

TEST(Span, DotOfBf16ValuesIsExactForSmallIntegers) {
  const std::vector<float> a{1, -2, 3, 4}, b{5, 6, -7, 8};
  const Span dot = f32_dot(a, b);
  EXPECT_TRUE(dot.single());
  EXPECT_EQ(dot.lo, 5 - 12 - 21 + 32);
}

TEST(Span, OneRoundingTakesTheNearestFloats) {
  const Span third = f32_div(Span::exact(1.0), Span::exact(3.0));
  EXPECT_TRUE(third.single());
  EXPECT_EQ(third.lo, static_cast<double>(1.0f / 3.0f));
}

TEST(Span, LibraryFunctionsHoldTheirUlps) {
  for (float x : {-9.5f, -1.0f, -1e-3f, 1e-6f, 0.5f, 3.0f, 20.0f}) {
    const Span e = f32_exp(Span::exact(x));
    EXPECT_LE(e.lo, std::exp(x));
    EXPECT_GE(e.hi, std::exp(x));
    const Span t = f32_tanh(Span::exact(x));
    EXPECT_LE(t.lo, std::tanh(x));
    EXPECT_GE(t.hi, std::tanh(x));
    EXPECT_LT(t.hi - t.lo, 8 * ulp_f32(std::tanh(x)) + 1e-45) << "x " << x;
  }
  EXPECT_TRUE(f32_exp(Span::exact(0.0)).single());
  EXPECT_EQ(f32_exp(Span::exact(0.0)).lo, 1.0);
  const Span r = f32_rsqrt(Span::exact(4.0));
  EXPECT_LE(r.lo, 0.5);
  EXPECT_GE(r.hi, 0.5);
}

TEST(Span, CosineCoversItsPeakInsideTheInterval) {
  const Span c = f32_cos(Span::around(0.0, -0.1, 0.1));
  EXPECT_EQ(c.hi, 1.0);
  const Span s = f32_sin(Span::around(1.5, 1.5, 1.7));
  EXPECT_EQ(s.hi, 1.0);
  const Span m = f32_cos(Span::around(3.1, 3.1, 3.2));
  EXPECT_EQ(m.lo, -1.0);
}

TEST(Span, Bf16RoundingPointKeepsBothNeighbours) {
  // An fp32 range straddling a bf16 tie admits both bf16 neighbours.
  const Span near_tie = Span::around(1.0 + 0x1p-8, 1.0 + 0x1p-8 - 0x1p-20, 1.0 + 0x1p-8 + 0x1p-20);
  const Span rounded = bf16(near_tie);
  EXPECT_EQ(rounded.lo, 1.0);
  EXPECT_EQ(rounded.hi, 1.0 + 0x1p-7);
}

TEST(Span, OverflowingMixedSumIsOpen) {
  const Span sum = f32_sum(std::vector<double>{3e38, 3e38, -3e38});
  EXPECT_TRUE(sum.open);
  const Span positive = f32_sum(std::vector<double>{3e38, 3e38});
  EXPECT_TRUE(std::isinf(positive.hi));
}

}  // namespace
}  // namespace plumb::contract

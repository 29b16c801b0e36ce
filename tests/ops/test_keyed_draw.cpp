// The keyed draw's integer steps (ops/keyed_draw.hpp): exp_fixed against the library exp, the exact
// fractions and targets against double arithmetic where that is exact, and the draw's rank order.
#include <cmath>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ops/sampling.hpp"

namespace plumb::ops {
namespace {

TEST(KeyedDraw, ExpFixedIsWithinTwoUlpOfExpAndExactAtZero) {
  EXPECT_EQ(keyed::exp_fixed(0.0), 1.0);
  EXPECT_EQ(keyed::weight(0.0), uint64_t{1} << keyed::kWeightBits);
  for (int i = 0; i <= 400000; ++i) {
    const double d = -40.0 * i / 400000.0;
    const double got = keyed::exp_fixed(d), want = std::exp(d);
    ASSERT_LE(std::fabs(got - want), 2.0 * std::ldexp(1.0, std::ilogb(want) - 52))
        << fmt::format("index {} d {:.17g}: expected {:.17g}, got {:.17g}, bound 2 ulp", i, d, want, got);
  }
  EXPECT_EQ(keyed::weight(-40.5), 0u);
  EXPECT_EQ(keyed::weight(-INFINITY), 0u);
}

TEST(KeyedDraw, CeilFractionAndDrawTargetAreExact) {
  std::mt19937_64 random(3);
  for (int i = 0; i < 100000; ++i) {
    // total < 2^29 and a 24-bit fraction: the product is exact in double.
    const uint64_t total = random() % (uint64_t{1} << 29);
    const float fraction =
        std::ldexp(static_cast<float>(random() % (1u << 24)), -24 - static_cast<int>(random() % 4));
    const double exact = static_cast<double>(total) * static_cast<double>(fraction);
    ASSERT_EQ(keyed::ceil_fraction(total, fraction), static_cast<uint64_t>(std::ceil(exact)))
        << fmt::format("index {} total {} fraction {:.9g}", i, total, fraction);
    const uint64_t t = keyed::draw_target(total + 1, 11, i);
    const double u = static_cast<double>(keyed::keyed_bits(11, i) >> 11) * 0x1.0p-53;
    ASSERT_LT(t, total + 1);
    ASSERT_EQ(t, static_cast<uint64_t>(std::floor(u * static_cast<double>(total + 1))))
        << fmt::format("index {} total {}", i, total + 1);
  }
  EXPECT_EQ(keyed::ceil_fraction(uint64_t{1} << 62, 0.5f), uint64_t{1} << 61);
  EXPECT_EQ(keyed::ceil_fraction(~uint64_t{0}, 1e-45f), 1u);  // the smallest subnormal
  EXPECT_EQ(keyed::draw_target(~uint64_t{0} >> 1, 5, 9) < (~uint64_t{0} >> 1), true);
}

TEST(KeyedDraw, RankKeysOrderLogitsDescendingThenIdsAscending) {
  EXPECT_GT(keyed::rank_key(2.0f, 9), keyed::rank_key(1.0f, 0));
  EXPECT_GT(keyed::rank_key(-1.0f, 9), keyed::rank_key(-2.0f, 0));
  EXPECT_GT(keyed::rank_key(1.0f, 3), keyed::rank_key(1.0f, 4));
  EXPECT_EQ(keyed::rank_key(-0.0f, 5), keyed::rank_key(0.0f, 5));
  EXPECT_EQ(keyed::key_id(keyed::rank_key(-7.5f, 123456)), 123456u);
  for (float logit : {-7.5f, 0.0f, -0.0f, 1e-40f, -3e38f, 29.96875f})
    EXPECT_EQ(keyed::key_logit(keyed::rank_key(logit, 5)), logit + 0.0f) << logit;
}

TEST(KeyedDraw, TopKDrawsOnlyAmongTheKLowestIdsOfATie) {
  const std::vector<float> row = {5.0f, 1.0f, 5.0f, 5.0f, 5.0f};
  for (int64_t position = 0; position < 200; ++position) {
    const int32_t id = draw_keyed(row, {1.0f, 1.0f, 0.0f, 2, 9, position});
    ASSERT_TRUE(id == 0 || id == 2) << "position " << position << " drew " << id;
  }
}

// Rows of ties, spread and sharp logits, NaN and infinities, under every filter mix: the quickselect draws
// the sort's id every time.
TEST(KeyedDraw, SelectionDrawsTheSortsId) {
  std::mt19937_64 random(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int compared = 0;
  for (int64_t width : {1, 2, 9, 300, 5000})
    for (int shape = 0; shape < 4; ++shape) {
      std::vector<float> row(static_cast<size_t>(width));
      for (float& value : row)
        value = shape == 0   ? static_cast<float>(static_cast<int>(random() % 5) - 2)  // many ties
                : shape == 1 ? 2.0f * normal(random)
                : shape == 2 ? 15.0f * normal(random)
                             : 1.0f;  // flat
      if (width > 2)
        for (int t = 0; t < 3; ++t) {
          row[random() % row.size()] = NAN;
          row[random() % row.size()] = -INFINITY;
        }
      for (float temperature : {0.0f, 0.4f, 1.0f, 3.0f})
        for (int32_t top_k : {0, 1, 2, 7, 400})
          for (float top_p : {1.0f, 0.9f, 0.35f})
            for (float min_p : {0.0f, 0.2f}) {
              const SampleParams params{temperature, top_p,    min_p,
                                        top_k,       random(), static_cast<int64_t>(random() % 4096)};
              const int32_t sorted = draw_keyed(row, params), selected = draw_keyed_by_selection(row, params);
              ASSERT_EQ(selected, sorted)
                  << fmt::format("width {} shape {} temperature {} top_k {} top_p {} min_p {}", width, shape,
                                 temperature, top_k, top_p, min_p);
              ++compared;
            }
    }
  EXPECT_EQ(compared, 5 * 4 * 4 * 5 * 3 * 2);
}

}  // namespace
}  // namespace plumb::ops

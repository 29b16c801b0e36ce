// Range checks on output bits: ordered ends with -0 below +0, one-value ranges by bits, NaN only for NaN.
#include <bit>
#include <cmath>

#include <gtest/gtest.h>

#include "contract/check.hpp"
#include "core/half.hpp"

namespace plumb::contract {
namespace {

uint32_t bits_of(float value) {
  return f32_to_bf16(value);
}

TEST(Check, OrderedEndsPutNegativeZeroBelowPositiveZero) {
  const Span up_from_positive_zero = Span::around(0.5, 0.0, 1.0);
  EXPECT_TRUE(element_passes(DType::bf16, 0x0000, up_from_positive_zero, 0));
  EXPECT_FALSE(element_passes(DType::bf16, 0x8000, up_from_positive_zero, 0)) << "-0 lies below +0";
  const Span around_zero = Span::around(0.0, -0.0, 0.0);
  EXPECT_TRUE(element_passes(DType::bf16, 0x8000, around_zero, 0));
  EXPECT_TRUE(element_passes(DType::bf16, 0x0000, around_zero, 0));
}

TEST(Check, OneValueRangeIsComparedByBits) {
  EXPECT_TRUE(element_passes(DType::bf16, 0x8000, Span::exact(-0.0), 0));
  EXPECT_FALSE(element_passes(DType::bf16, 0x0000, Span::exact(-0.0), 0));
  EXPECT_TRUE(element_passes(DType::bf16, bits_of(1.5f), Span::exact(1.5), 0));
  EXPECT_FALSE(element_passes(DType::bf16, bits_of(1.5078125f), Span::exact(1.5), 0));
  EXPECT_TRUE(element_passes(DType::f32, std::bit_cast<uint32_t>(0.1f), Span::exact(0.1f), 0));
  EXPECT_TRUE(element_passes(DType::i32, 7, Span::exact(7), 0));
  EXPECT_FALSE(element_passes(DType::i32, 8, Span::exact(7), 0));
}

TEST(Check, NanOnlyWhereTheReferenceHasNan) {
  Span nan = Span::exact(std::nan(""));
  EXPECT_TRUE(nan.nan);
  EXPECT_TRUE(element_passes(DType::bf16, 0x7fc0, nan, 0));
  EXPECT_TRUE(element_passes(DType::bf16, 0xffc1, nan, 0)) << "any NaN payload";
  EXPECT_FALSE(element_passes(DType::bf16, 0x3f80, nan, 0));
  EXPECT_FALSE(element_passes(DType::bf16, 0x7fc0, Span::around(1.0, 0.5, 2.0), 0));
  EXPECT_FALSE(element_passes(DType::bf16, 0x7fc0, Span::around(0.0, -INFINITY, INFINITY), 0));
}

TEST(Check, InfinitiesSitAtTheEnds) {
  EXPECT_TRUE(element_passes(DType::bf16, 0x7f80, Span::around(1e38, 1e38, INFINITY), 0));
  EXPECT_FALSE(element_passes(DType::bf16, 0xff80, Span::around(1e38, 1e38, INFINITY), 0));
}

TEST(Check, KeptElementsMustHoldTheirOldBits) {
  EXPECT_TRUE(element_passes(DType::bf16, 0x7fa1, Span::untouched(), 0x7fa1));
  EXPECT_FALSE(element_passes(DType::bf16, 0x3f80, Span::untouched(), 0x7fa1));
}

TEST(Check, FailureNamesIndexRangeValueAndSeed) {
  Call call;
  call.seed = 0x2a;
  call.rows = 2;
  call.inputs_kind = "gaussian";
  call.outputs.push_back(HostData::zeros("out", DType::bf16, {2, 3}, true));
  call.outputs[0].as<uint16_t>()[4] = bits_of(2.0f);
  std::vector<Span> expected(6, Span::exact(0.0));
  expected[4] = Span::around(1.0, 0.75, 1.25);
  const Comparison comparison = compare_output(call.outputs[0], 0, expected, 0);
  ASSERT_EQ(comparison.failed, 1);
  const std::string text = describe_finding(call, *comparison.first);
  EXPECT_NE(text.find("index 4 [1, 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("value 2 (bits 0x4000)"), std::string::npos) << text;
  EXPECT_NE(text.find("range [0.75, 1.25]"), std::string::npos) << text;
  EXPECT_NE(text.find("seed 0x000000000000002a"), std::string::npos) << text;
}

}  // namespace
}  // namespace plumb::contract

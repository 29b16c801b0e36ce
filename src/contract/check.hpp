#pragma once
// Compares output bits with their ranges: ordered ends with -0 below +0, a one-value range by its bits, NaN
// only where the reference is NaN, untouched elements by the bits they held before the launch.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "contract/call.hpp"
#include "contract/span.hpp"

namespace plumb::contract {

// `kept_bits`: what the element held before the launch (the poison), for ranges marked kept.
bool element_passes(DType dtype, uint32_t bits, const Span& range, uint32_t kept_bits);

struct Finding {
  int output = 0;
  int64_t index = 0;
  Span range;
  uint32_t bits = 0;
};

struct Comparison {
  int64_t checked = 0;  // elements held to a range (open ones are not)
  int64_t failed = 0;
  std::optional<Finding> first;
};

Comparison compare_output(const HostData& out, int output, std::span<const Span> expected,
                          uint32_t kept_bits);

// "index 7 (row 0, [0, 7]) value 1.5 (bits 0x3fc0), range [1.49, 1.5] (reference 1.4996), seed 0x1f,
// inputs gaussian"
std::string describe_finding(const Call& call, const Finding& finding);
// The value of raw element bits of `dtype`, printed with enough digits to tell neighbours apart.
std::string format_bits(DType dtype, uint32_t bits);
std::string format_value(double value);

}  // namespace plumb::contract

#include "contract/check.hpp"

#include <bit>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/half.hpp"

namespace plumb::contract {
namespace {

double decode(DType dtype, uint32_t bits) {
  switch (dtype) {
    case DType::bf16:
      return bf16_to_f32(static_cast<uint16_t>(bits));
    case DType::f32:
      return std::bit_cast<float>(bits);
    case DType::i32:
      return static_cast<int32_t>(bits);
    default:
      PLUMB_ASSERT(false, "outputs are bf16, f32 or i32");
      return 0.0;
  }
}

// The bits a one-value range stands for, in the output's dtype.
uint32_t encode(DType dtype, double value) {
  switch (dtype) {
    case DType::bf16:
      return round_to_bf16_bits(value);
    case DType::f32:
      return std::bit_cast<uint32_t>(round_f32(value));
    default:
      return static_cast<uint32_t>(static_cast<int32_t>(value));
  }
}

std::string index_text(const Shape& shape, int64_t index) {
  std::vector<int64_t> coordinates(shape.size());
  for (size_t axis = shape.size(); axis-- > 0;) {
    coordinates[axis] = index % shape[axis];
    index /= shape[axis];
  }
  return fmt::format("[{}]", fmt::join(coordinates, ", "));
}

}  // namespace

bool element_passes(DType dtype, uint32_t bits, const Span& range, uint32_t kept_bits) {
  if (range.kept) return bits == kept_bits;
  if (range.open) return true;
  const double value = decode(dtype, bits);
  if (std::isnan(value) || range.nan) return std::isnan(value) && range.nan;
  if (range.single()) return bits == encode(dtype, range.lo);
  return order_key(range.lo) <= order_key(value) && order_key(value) <= order_key(range.hi);
}

Comparison compare_output(const HostData& out, int output, std::span<const Span> expected,
                          uint32_t kept_bits) {
  PLUMB_ASSERT(static_cast<int64_t>(expected.size()) == out.elements(), "one range per output element");
  Comparison comparison;
  for (int64_t i = 0; i < out.elements(); ++i) {
    const Span& range = expected[static_cast<size_t>(i)];
    if (range.open) continue;
    ++comparison.checked;
    const uint32_t bits = out.bits(i);
    if (element_passes(out.dtype, bits, range, kept_bits)) continue;
    if (comparison.failed++ == 0) comparison.first = Finding{output, i, range, bits};
  }
  return comparison;
}

std::string format_value(double value) {
  return fmt::format("{:.9g}", value);
}

std::string format_bits(DType dtype, uint32_t bits) {
  const int digits = dtype == DType::bf16 ? 4 : 8;
  return fmt::format("{} (bits 0x{:0{}x})", format_value(decode(dtype, bits)), bits, digits);
}

std::string describe_finding(const Call& call, const Finding& finding) {
  const HostData& out = call.outputs.at(static_cast<size_t>(finding.output));
  const int64_t per_row = call.rows > 0 ? out.elements() / std::max<int64_t>(out.shape[0], 1) : 0;
  const int64_t row = per_row > 0 && out.shape[0] == call.rows ? finding.index / per_row : 0;
  const Span& range = finding.range;
  std::string expected;
  if (range.kept)
    expected = "untouched (the launch must not write here)";
  else if (range.nan)
    expected = "NaN";
  else
    expected = fmt::format("range [{}, {}] (reference {})", format_value(range.lo), format_value(range.hi),
                           format_value(range.mid));
  return fmt::format("output '{}' index {} {}: value {}, expected {}, seed 0x{:016x}, inputs {}", out.name,
                     finding.index, index_text(out.shape, finding.index),
                     format_bits(out.dtype, finding.bits), expected, call.seed_of_row(row), call.inputs_kind);
}

}  // namespace plumb::contract

#include "contract/span.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "core/half.hpp"

namespace plumb::contract {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kUnit = 0x1p-24;  // fp32 unit roundoff
// Half an ulp above FLT_MAX: from here round-to-nearest overflows to infinity.
constexpr double kF32Overflow = static_cast<double>(FLT_MAX) + 0x1p103;

// IEEE product of two ends, except 0 * inf = 0 (ends are limits of real values, not infinities).
double end_product(double a, double b) {
  if (a == 0.0 || b == 0.0) return std::signbit(a) != std::signbit(b) ? -0.0 : 0.0;
  return a * b;
}

Span combine(const Span& a, const Span& b, double mid, double lo, double hi) {
  Span out = Span::around(mid, lo, hi);
  out.nan = a.nan || b.nan || std::isnan(mid);
  out.open = a.open || b.open || std::isnan(lo) || std::isnan(hi);
  return out;
}

Span from_candidates(const Span& a, const Span& b, double mid, std::initializer_list<double> candidates) {
  double lo = kInf, hi = -kInf;
  bool broken = false;
  for (double value : candidates) {
    broken = broken || std::isnan(value);
    lo = ordered_min(lo, value);
    hi = ordered_max(hi, value);
  }
  if (broken) lo = hi = std::nan("");
  return combine(a, b, mid, lo, hi);
}

// The result of an fp32 library function within `ulps` ulps of f over [f_lo, f_hi] (already ordered), never
// outside the function's own range [floor, ceiling].
Span library_result(const Span& x, double mid, double f_lo, double f_hi, int ulps, double floor = -kInf,
                    double ceiling = kInf) {
  const double widest = std::max(std::fabs(f_lo), std::fabs(f_hi));
  const double allowance = std::isinf(widest) ? 0.0 : ulps * ulp_f32(widest);
  Span out = Span::around(mid, std::max(floor, f_lo - allowance), std::min(ceiling, f_hi + allowance));
  out.nan = x.nan || std::isnan(mid);
  out.open = x.open;
  return f32(out);
}

bool is_exact_zero(const Span& x) {
  return x.single() && x.lo == 0.0;
}

// The exponent of the lowest set bit of a nonzero finite double.
int lowest_bit_exponent(double value) {
  int exponent = 0;
  const double fraction = std::frexp(std::fabs(value), &exponent);
  const auto mantissa = static_cast<uint64_t>(std::ldexp(fraction, 53));
  return exponent - 53 + std::countr_zero(mantissa);
}

}  // namespace

Span Span::exact(double value) {
  return around(value, value, value);
}

Span Span::around(double mid, double lo, double hi) {
  Span span;
  span.mid = mid;
  span.lo = lo;
  span.hi = hi;
  span.nan = std::isnan(mid);
  return span;
}

Span Span::open_range(double mid) {
  Span span = around(mid, -kInf, kInf);
  span.open = true;
  return span;
}

Span Span::untouched() {
  Span span;
  span.kept = true;
  return span;
}

bool Span::single() const {
  return std::bit_cast<uint64_t>(lo) == std::bit_cast<uint64_t>(hi);
}

int64_t order_key(double value) {
  const auto bits = std::bit_cast<int64_t>(value);
  const int64_t magnitude = bits & std::numeric_limits<int64_t>::max();
  return bits < 0 ? -magnitude - 1 : magnitude;
}

double ordered_min(double a, double b) {
  return order_key(b) < order_key(a) ? b : a;
}

double ordered_max(double a, double b) {
  return order_key(b) > order_key(a) ? b : a;
}

float round_f32(double value) {
  if (std::isnan(value)) return std::numeric_limits<float>::quiet_NaN();
  if (std::fabs(value) >= kF32Overflow)
    return std::signbit(value) ? -std::numeric_limits<float>::infinity()
                               : std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

uint16_t round_to_bf16_bits(double value) {
  float rounded = round_f32(value);
  const uint32_t bits = std::bit_cast<uint32_t>(rounded);
  // An fp32 value exactly on a bf16 tie that is not the value itself: step off the tie toward the value.
  if ((bits & 0xffffu) == 0x8000u && std::isfinite(rounded) && static_cast<double>(rounded) != value)
    rounded = std::nextafter(rounded, value > rounded ? std::numeric_limits<float>::infinity()
                                                      : -std::numeric_limits<float>::infinity());
  return f32_to_bf16(rounded);
}

double round_bf16_value(double value) {
  return static_cast<double>(bf16_to_f32(round_to_bf16_bits(value)));
}

double ulp_f32(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude < static_cast<double>(FLT_MIN)) return 0x1p-149;
  if (magnitude >= static_cast<double>(FLT_MAX)) return 0x1p104;
  int exponent = 0;
  std::frexp(magnitude, &exponent);
  return std::ldexp(1.0, exponent - 24);
}

Span operator+(const Span& a, const Span& b) {
  return combine(a, b, a.mid + b.mid, a.lo + b.lo, a.hi + b.hi);
}

Span operator-(const Span& a) {
  Span out = Span::around(-a.mid, -a.hi, -a.lo);
  out.nan = a.nan;
  out.open = a.open;
  return out;
}

Span operator-(const Span& a, const Span& b) {
  return a + (-b);
}

Span operator*(const Span& a, const Span& b) {
  return from_candidates(
      a, b, a.mid * b.mid,
      {end_product(a.lo, b.lo), end_product(a.lo, b.hi), end_product(a.hi, b.lo), end_product(a.hi, b.hi)});
}

Span operator/(const Span& a, const Span& b) {
  const bool spans_zero = order_key(b.lo) <= order_key(0.0) && order_key(b.hi) >= order_key(-0.0);
  if (spans_zero) {
    Span out = Span::open_range(a.mid / b.mid);
    out.nan = a.nan || b.nan || std::isnan(out.mid);
    return out;
  }
  return from_candidates(a, b, a.mid / b.mid, {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi});
}

Span f32(const Span& value) {
  Span out = value;
  out.lo = static_cast<double>(round_f32(value.lo));
  out.hi = static_cast<double>(round_f32(value.hi));
  return out;
}

Span f32_add(const Span& a, const Span& b) {
  return f32(a + b);
}

Span f32_sub(const Span& a, const Span& b) {
  return f32(a - b);
}

Span f32_mul(const Span& a, const Span& b) {
  return f32(a * b);
}

Span f32_div(const Span& a, const Span& b) {
  return f32(a / b);
}

Span f32_chain(const Span& exact_value, int ops) {
  const double relative = gamma_f32(ops);
  Span out = exact_value;
  out.lo = exact_value.lo - std::fabs(exact_value.lo) * relative;
  out.hi = exact_value.hi + std::fabs(exact_value.hi) * relative;
  return f32(out);
}

Span bf16(const Span& value) {
  Span out = value;
  out.lo = round_bf16_value(value.lo);
  out.hi = round_bf16_value(value.hi);
  out.mid = round_bf16_value(value.mid);
  return out;
}

Span f32_constant(double value) {
  const auto nearest = static_cast<double>(round_f32(value));
  if (nearest == value) return Span::exact(value);
  const auto other =
      static_cast<double>(std::nextafter(static_cast<float>(nearest), value > nearest ? FLT_MAX : -FLT_MAX));
  return Span::around(value, std::min(nearest, other), std::max(nearest, other));
}

Span f32_exp(const Span& x) {
  if (is_exact_zero(x)) return Span::exact(1.0);
  return library_result(x, std::exp(x.mid), std::exp(x.lo), std::exp(x.hi), kExpUlps, 0.0);
}

Span f32_tanh(const Span& x) {
  if (is_exact_zero(x)) return x;
  return library_result(x, std::tanh(x.mid), std::tanh(x.lo), std::tanh(x.hi), kTanhUlps, -1.0, 1.0);
}

Span f32_rsqrt(const Span& x) {
  if (std::signbit(x.lo) && x.lo != 0.0) return Span::open_range(1.0 / std::sqrt(x.mid));
  const auto rsqrt = [](double value) { return value == 0.0 ? kInf : 1.0 / std::sqrt(value); };
  return library_result(x, rsqrt(x.mid), rsqrt(x.hi), rsqrt(x.lo), kRsqrtUlps, 0.0);
}

Span f32_cos(const Span& x) {
  if (is_exact_zero(x)) return Span::exact(1.0);
  constexpr double pi = std::numbers::pi;
  double lo = std::min(std::cos(x.lo), std::cos(x.hi));
  double hi = std::max(std::cos(x.lo), std::cos(x.hi));
  // cos peaks at even multiples of pi and bottoms out at odd ones.
  if (std::floor(x.hi / (2 * pi)) > std::floor(x.lo / (2 * pi)) || x.hi - x.lo >= 2 * pi) hi = 1.0;
  if (std::floor((x.hi - pi) / (2 * pi)) > std::floor((x.lo - pi) / (2 * pi)) || x.hi - x.lo >= 2 * pi)
    lo = -1.0;
  return library_result(x, std::cos(x.mid), lo, hi, kSinCosUlps, -1.0, 1.0);
}

Span f32_sin(const Span& x) {
  if (is_exact_zero(x)) return x;
  constexpr double pi = std::numbers::pi;
  Span shifted = x;  // sin(t) = cos(t - pi/2): the extremes sit where cos has them
  shifted.lo -= pi / 2;
  shifted.hi -= pi / 2;
  double lo = std::min(std::sin(x.lo), std::sin(x.hi));
  double hi = std::max(std::sin(x.lo), std::sin(x.hi));
  if (std::floor(shifted.hi / (2 * pi)) > std::floor(shifted.lo / (2 * pi)) || x.hi - x.lo >= 2 * pi)
    hi = 1.0;
  if (std::floor((shifted.hi - pi) / (2 * pi)) > std::floor((shifted.lo - pi) / (2 * pi)) ||
      x.hi - x.lo >= 2 * pi)
    lo = -1.0;
  return library_result(x, std::sin(x.mid), lo, hi, kSinCosUlps, -1.0, 1.0);
}

double gamma_f32(int64_t n) {
  const double nu = static_cast<double>(n) * kUnit;
  return nu / (1.0 - nu);
}

Span f32_sum(std::span<const double> terms, bool terms_rounded) {
  if (terms.empty()) return Span::exact(0.0);
  double sum = 0.0, compensation = 0.0, abs_sum = 0.0, min_abs = kInf;
  bool any_negative_zero = false, any_positive = false, any_negative = false;
  for (double term : terms) {
    const double next = sum + term;  // Neumaier: keeps the float64 sum exact to a few units of 2^-53
    compensation += std::fabs(sum) >= std::fabs(term) ? (sum - next) + term : (term - next) + sum;
    sum = next;
    const double magnitude = std::fabs(term);
    abs_sum += magnitude;
    if (magnitude != 0.0) min_abs = std::min(min_abs, magnitude);
    any_negative_zero = any_negative_zero || (term == 0.0 && std::signbit(term));
    any_positive = any_positive || term > 0.0;
    any_negative = any_negative || term < 0.0;
  }
  const double mid = sum + compensation;
  if (std::isnan(mid)) return Span::exact(mid);
  abs_sum *= 1.0 + 0x1p-40;
  if (min_abs == kInf) return Span::around(mid, any_negative_zero ? -0.0 : 0.0, 0.0);
  const int64_t additions = static_cast<int64_t>(terms.size()) - 1;
  const int64_t roundings = terms_rounded ? additions + 1 : additions;
  const bool may_overflow = abs_sum * (1.0 + gamma_f32(roundings + 1)) >= static_cast<double>(FLT_MAX);
  // Some order overflows: mixed signs may meet inf - inf; one sign saturates to its infinity.
  if (may_overflow && any_positive && any_negative) return Span::open_range(mid);
  if (!terms_rounded && !may_overflow) {
    int quantum = std::ilogb(min_abs);
    if (abs_sum < std::ldexp(1.0, quantum + 24)) {
      for (double term : terms)
        if (term != 0.0) quantum = std::min(quantum, lowest_bit_exponent(term));
      // Every partial sum in any order is a multiple of 2^quantum below 2^(quantum+24): exact.
      if (quantum >= -149 && abs_sum <= std::ldexp(1.0, quantum + 24))
        return Span::exact(mid == 0.0 ? 0.0 : mid);
    }
  }
  double allowance = gamma_f32(roundings) * abs_sum + abs_sum * 0x1p-50;
  if (terms_rounded) allowance += static_cast<double>(terms.size()) * 0x1p-150;  // products may underflow
  Span result = Span::around(mid, mid - allowance, mid + allowance);
  if (may_overflow && any_positive) result.hi = kInf;
  if (may_overflow && any_negative) result.lo = -kInf;
  return f32(result);
}

Span f32_sum(std::span<const Span> terms) {
  std::vector<double> singles;
  bool all_single = true;
  for (const Span& term : terms) {
    if (term.nan || term.open) return term.nan ? Span::exact(std::nan("")) : Span::open_range(0.0);
    all_single = all_single && term.single();
    if (all_single) singles.push_back(term.lo);
  }
  if (all_single) return f32_sum(singles, false);
  double lo = 0.0, hi = 0.0, widest = 0.0;
  std::vector<double> mids;
  for (const Span& term : terms) {
    lo += term.lo;
    hi += term.hi;
    widest += std::max(std::fabs(term.lo), std::fabs(term.hi));
    mids.push_back(term.mid);
  }
  const Span mid_sum = f32_sum(mids, false);
  const int64_t additions = static_cast<int64_t>(terms.size()) - 1;
  if (widest * (1.0 + gamma_f32(additions + 1)) >= static_cast<double>(FLT_MAX))
    return Span::open_range(mid_sum.mid);
  // The ends' own float64 sums round too: a relative 2^-50 covers them.
  const double allowance = gamma_f32(additions) * widest + widest * 0x1p-50;
  return f32(Span::around(mid_sum.mid, lo - allowance, hi + allowance));
}

Span f32_dot(std::span<const float> a, std::span<const float> b) {
  std::vector<double> products(a.size());
  bool rounded = false;
  for (size_t i = 0; i < a.size(); ++i) {
    products[i] = static_cast<double>(a[i]) * static_cast<double>(b[i]);
    rounded = rounded || static_cast<double>(round_f32(products[i])) != products[i];
  }
  return f32_sum(products, rounded);
}

}  // namespace plumb::contract

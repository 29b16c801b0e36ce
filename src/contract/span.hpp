#pragma once
// Ranges of the values fp32 arithmetic may produce (DESIGN.md §3, gate 3). A Span holds the float64 value at
// the reference's rounding points (mid) and the ends [lo, hi] that every fp32 evaluation of the same steps
// lies between. Ends are ordered with -0 below +0; a Span whose ends are the same bits is one exact value.
#include <cstdint>
#include <span>

namespace plumb::contract {

struct Span {
  double lo = 0.0;
  double hi = 0.0;
  double mid = 0.0;
  bool nan = false;   // the reference is NaN: only NaN passes
  bool open = false;  // fp32 may overflow into inf - inf here: nothing is checked
  bool kept = false;  // the launch must not write here: the element keeps the bits it had before

  static Span exact(double value);
  static Span around(double mid, double lo, double hi);
  static Span open_range(double mid);
  static Span untouched();
  // One value: both ends carry the same bits, so it is checked bit for bit.
  bool single() const;
};

// A total order on doubles with -0 below +0 (NaN excluded): larger key, larger value.
int64_t order_key(double value);
double ordered_min(double a, double b);
double ordered_max(double a, double b);

// Round to nearest even, straight from double (no double rounding through f32), with IEEE overflow.
float round_f32(double value);
uint16_t round_to_bf16_bits(double value);
double round_bf16_value(double value);
// The distance between |value| and the next larger fp32 magnitude (subnormal spacing below the normals).
double ulp_f32(double value);

// Exact real interval arithmetic on the ends (IEEE signs of zero at the ends), mid in float64.
Span operator+(const Span& a, const Span& b);
Span operator-(const Span& a, const Span& b);
Span operator*(const Span& a, const Span& b);
Span operator/(const Span& a, const Span& b);
Span operator-(const Span& a);

// One fp32 rounding of the step that produced `value`: ends go to their own nearest-even fp32 values.
Span f32(const Span& value);
// The steps as fp32 ops: exact result, then one rounding.
Span f32_add(const Span& a, const Span& b);
Span f32_sub(const Span& a, const Span& b);
Span f32_mul(const Span& a, const Span& b);
Span f32_div(const Span& a, const Span& b);
// A chain of `ops` fp32 multiplications or divisions in an order the kernel chooses: gamma(ops) relative.
Span f32_chain(const Span& exact_value, int ops);
// One bf16 rounding point: every value, mid included, rounds to nearest even bf16.
Span bf16(const Span& value);
// An fp32 constant the kernel may round either way (a double literal written into fp32 code).
Span f32_constant(double value);

// fp32 library functions within `ulps` of the correctly rounded result (CUDA's and glibc's documented
// bounds); the C standard's exact cases (exp(0) = 1, tanh(0) = 0, cos(0) = 1, sin(0) = 0) are exact.
inline constexpr int kExpUlps = 2;
inline constexpr int kTanhUlps = 2;
inline constexpr int kRsqrtUlps = 2;
inline constexpr int kSinCosUlps = 2;
Span f32_exp(const Span& x);
Span f32_tanh(const Span& x);
Span f32_rsqrt(const Span& x);
Span f32_cos(const Span& x);
Span f32_sin(const Span& x);

// gamma(n) = n u / (1 - n u) with u = 2^-24: the relative bound of n fp32 roundings in any order.
double gamma_f32(int64_t n);

// Sum of exact terms (each an fp32 product or value) accumulated in fp32 in any order or tree. Exact (one
// value) when every partial sum is representable: all terms multiples of 2^e with sum |t| below 2^(e+24).
// terms_rounded: each term is itself one fp32 rounding of an exact product (fp32 x fp32 operands).
Span f32_sum(std::span<const double> terms, bool terms_rounded = false);
// Sum of fp32 values each known to lie in its span (exact real ends), accumulated in fp32 in any order.
Span f32_sum(std::span<const Span> terms);
// sum_i a[i] * b[i] with fp32 operands, accumulated in fp32 in any order (FMA or not).
Span f32_dot(std::span<const float> a, std::span<const float> b);

}  // namespace plumb::contract

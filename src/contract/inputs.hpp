#pragma once
// Seeded input generators. Ordinary inputs are Gaussian; stress inputs (gate 4) are built so that a wrong
// precision or a wrong summation shows: with them fp32 is exact in any order, and anything coarser is not.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace plumb::contract {

enum class Inputs : uint8_t {
  gaussian,      // N(0, scale^2), rounded to bf16
  zero_sum,      // rows of integers that sum to zero
  cancel_pairs,  // +-2^20 pairs among small integers: precision below fp32 loses the small ones
  extremes,      // signed zeros, subnormals, the largest and smallest normals, near-overflow values
  equal_scores,  // attention: every visible key scores the same; the values cancel
  long_keys,     // attention: a long run of keys (thousands) whose values cancel to a small sum
  ties,          // argmax: repeated maxima (and NaN) in a row
  fractions,     // matmul: small integers over affine weights whose scale has low bits, so every sum is
                 // exact in fp32 and every dequantized weight needs its bf16 rounding
};
std::string_view inputs_name(Inputs inputs);

// SplitMix64: the same stream on every platform and compiler.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();                         // [0, 1)
  double normal();                          // N(0, 1), Box-Muller
  int64_t integer(int64_t lo, int64_t hi);  // [lo, hi]

 private:
  uint64_t state_;
};

// Mixes a seed with a salt (a form's name, a tensor's index) into an independent stream's seed.
uint64_t mix_seed(uint64_t seed, uint64_t salt);
uint64_t name_seed(std::string_view name);

// bf16 bit patterns.
std::vector<uint16_t> gaussian_bf16(Rng& rng, int64_t count, double scale);
// Integers in [-limit, limit] (exact in bf16 up to 256), in groups of `width` that each sum to zero.
std::vector<uint16_t> zero_sum_bf16(Rng& rng, int64_t rows, int64_t width, int limit);
// Rows of `width` with `pairs` pairs of +-2^20 placed at random and small integers in [-limit, limit]
// elsewhere, so a row's exact sum is a small integer while the partial sums pass 2^20.
std::vector<uint16_t> cancel_pairs_bf16(Rng& rng, int64_t rows, int64_t width, int pairs, int limit);
// Values spread over bf16's range: +-0, subnormals, 2^-126, 1, large normals up to `max_magnitude`.
std::vector<uint16_t> extremes_bf16(Rng& rng, int64_t count, double max_magnitude);
// Uniform in [-scale, scale], four values a draw: for large weights, where the distribution matters little.
std::vector<uint16_t> spread_bf16(Rng& rng, int64_t count, double scale);
// Small integers in [lo, hi] as bf16.
std::vector<uint16_t> integers_bf16(Rng& rng, int64_t count, int lo, int hi);

// Copies bf16 bits into a byte vector (the layout HostData holds).
void store_bf16(std::span<const uint16_t> values, std::vector<uint8_t>& bytes);

}  // namespace plumb::contract

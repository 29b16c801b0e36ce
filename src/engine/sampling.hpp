#pragma once
// Keyed sampling (DESIGN.md §2): the token drawn for absolute position p is a pure function of the logits
// row, the sampling options, the seed and p, so drafted, concurrent, resumed and repeated runs draw the same
// token.
//
// The procedure, step by step (a CUDA version must follow the same steps):
//   1. temperature == 0 (or top_k == 1): the id of the largest logit; ties go to the lowest id; NaN never
//   wins.
//   2. Otherwise every id with a finite logit is a candidate, scaled as float(logit / temperature) and
//   ordered by
//      (scaled descending, id ascending).
//   3. top_k > 0 keeps the first top_k candidates.
//   4. Probabilities in double, in that order: p_i = exp(s_i - s_0) / sum_j exp(s_j - s_0).
//   5. top_p < 1 keeps the shortest prefix whose cumulative probability reaches top_p (at least one
//   candidate).
//   6. min_p > 0 keeps the candidates with p_i >= min_p * p_0.
//   7. u = keyed_uniform(seed, p) in [0, 1); the kept candidates' weights are summed in order into a running
//      total; the draw is the first candidate whose running total exceeds u * (sum of the kept weights).
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/error.hpp"

namespace plumb::engine {

struct SamplingOptions {
  float temperature = 0.0f;
  int top_k = 0;                 // 0: no top-k
  float top_p = 1.0f;            // 1: no top-p
  float min_p = 0.0f;            // 0: no min-p
  std::optional<uint64_t> seed;  // absent: derived from the prompt (prompt_seed)
};

// Checks ranges: temperature >= 0 and finite, top_k >= 0, 0 < top_p <= 1, 0 <= min_p <= 1.
Status validate(const SamplingOptions& options);

// splitmix64's finalizer: a bijective 64-bit mix.
uint64_t mix64(uint64_t value);

// The random bits for absolute position `position`: mix64(mix64(seed) ^ mix64(position + 1)) - counter based,
// no state carried between draws.
uint64_t keyed_bits(uint64_t seed, int64_t position);

// keyed_bits' top 53 bits as a double in [0, 1).
double keyed_uniform(uint64_t seed, int64_t position);

// A request without a seed gets FNV-1a 64 over its prompt ids (int32, little-endian bytes), passed through
// mix64.
uint64_t prompt_seed(std::span<const int32_t> prompt_tokens);

// The id of the largest value; ties to the lowest id; NaN is never chosen; -1 for an empty or all-NaN row.
int32_t argmax_lowest_id(std::span<const float> logits);

// The token for absolute position `position` (the index the drawn token will occupy in the sequence).
int32_t sample_keyed(std::span<const float> logits, const SamplingOptions& options, uint64_t seed,
                     int64_t position);

// sha256 of the ids as little-endian int32 bytes, lower-case hex: the `token_sha` of replies.
std::string token_sha(std::span<const int32_t> tokens);

}  // namespace plumb::engine

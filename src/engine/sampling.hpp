#pragma once
// Keyed sampling (DESIGN.md §2): the token drawn for absolute position p is a pure function of the logits
// row, the sampling options, the seed and p, so drafted, concurrent, resumed and repeated runs draw the same
// token. The draw itself is ops/keyed_draw.hpp's integer procedure, the same bits on the host and the
// device; this layer holds the request's options, their checks and the seed a request without one gets.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/error.hpp"
#include "ops/keyed_draw.hpp"

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

using ops::keyed::keyed_bits;  // mix64(mix64(seed) ^ mix64(position + 1))
using ops::keyed::mix64;       // splitmix64's finalizer

// A request without a seed gets FNV-1a 64 over its prompt ids (int32, little-endian bytes), passed through
// mix64.
uint64_t prompt_seed(std::span<const int32_t> prompt_tokens);

// The options as the draw's parameters (ops::sample), for the position the drawn token takes.
ops::SampleParams draw_params(const SamplingOptions& options, uint64_t seed, int64_t position);

// The token for absolute position `position` (the index the drawn token will occupy in the sequence), drawn
// on the host.
int32_t sample_keyed(std::span<const float> logits, const SamplingOptions& options, uint64_t seed,
                     int64_t position);

// sha256 of the ids as little-endian int32 bytes, lower-case hex: the `token_sha` of replies.
std::string token_sha(std::span<const int32_t> tokens);

}  // namespace plumb::engine

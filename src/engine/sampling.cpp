#include "engine/sampling.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "ops/sampling.hpp"

namespace plumb::engine {

Status validate(const SamplingOptions& options) {
  if (!std::isfinite(options.temperature) || options.temperature < 0.0f)
    return error_at("sampling", "option", "temperature", "is out of range", "a finite value >= 0",
                    fmt::format("{}", options.temperature));
  if (options.top_k < 0)
    return error_at("sampling", "option", "top_k", "is out of range", ">= 0",
                    fmt::format("{}", options.top_k));
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f))
    return error_at("sampling", "option", "top_p", "is out of range", "0 < top_p <= 1",
                    fmt::format("{}", options.top_p));
  if (!(options.min_p >= 0.0f && options.min_p <= 1.0f))
    return error_at("sampling", "option", "min_p", "is out of range", "0 <= min_p <= 1",
                    fmt::format("{}", options.min_p));
  return {};
}

uint64_t prompt_seed(std::span<const int32_t> prompt_tokens) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (int32_t token : prompt_tokens) {
    const auto bits = static_cast<uint32_t>(token);
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= (bits >> (8 * byte)) & 0xffu;
      hash *= 0x100000001b3ull;
    }
  }
  return mix64(hash);
}

ops::SampleParams draw_params(const SamplingOptions& options, uint64_t seed, int64_t position) {
  return {options.temperature, options.top_p, options.min_p, options.top_k, seed, position};
}

int32_t sample_keyed(std::span<const float> logits, const SamplingOptions& options, uint64_t seed,
                     int64_t position) {
  return ops::draw_keyed(logits, draw_params(options, seed, position));
}

std::string token_sha(std::span<const int32_t> tokens) {
  std::vector<unsigned char> bytes;
  bytes.reserve(tokens.size() * 4);
  for (int32_t token : tokens) {
    const auto bits = static_cast<uint32_t>(token);
    for (int byte = 0; byte < 4; ++byte)
      bytes.push_back(static_cast<unsigned char>((bits >> (8 * byte)) & 0xffu));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const int ok = EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  PLUMB_ASSERT(ok == 1 && length == 32, "EVP_Digest(sha256) failed");
  std::string hex;
  hex.reserve(64);
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace plumb::engine

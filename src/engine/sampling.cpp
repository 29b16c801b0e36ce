#include "engine/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>

namespace plumb::engine {

namespace {

struct Candidate {
  float scaled;
  int32_t id;
};

// (scaled descending, id ascending): a total order, so equal logits never depend on the sort's internals.
bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.scaled != b.scaled) return a.scaled > b.scaled;
  return a.id < b.id;
}

std::vector<Candidate> ranked_candidates(std::span<const float> logits, float temperature, int top_k) {
  std::vector<Candidate> candidates;
  candidates.reserve(logits.size());
  for (size_t id = 0; id < logits.size(); ++id)
    if (std::isfinite(logits[id])) candidates.push_back({logits[id] / temperature, static_cast<int32_t>(id)});
  const size_t keep = top_k > 0 ? std::min(candidates.size(), static_cast<size_t>(top_k)) : candidates.size();
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                    candidates.end(), ranks_before);
  candidates.resize(keep);
  return candidates;
}

// Unnormalised weights exp(s_i - s_0), in rank order.
std::vector<double> relative_weights(const std::vector<Candidate>& candidates) {
  std::vector<double> weights(candidates.size());
  const double top = candidates.front().scaled;
  for (size_t i = 0; i < candidates.size(); ++i) weights[i] = std::exp(double{candidates[i].scaled} - top);
  return weights;
}

// How many leading candidates top-p and min-p keep.
size_t kept_count(const std::vector<double>& weights, float top_p, float min_p) {
  size_t kept = weights.size();
  if (top_p < 1.0f) {
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    double cumulative = 0.0;
    for (size_t i = 0; i < weights.size(); ++i) {
      cumulative += weights[i] / total;
      if (cumulative >= double{top_p}) {
        kept = i + 1;
        break;
      }
    }
  }
  if (min_p > 0.0f) {
    size_t above = 1;  // weights[0] == 1 is the largest, so min_p <= 1 always keeps it
    while (above < kept && weights[above] >= double{min_p}) ++above;
    kept = above;
  }
  return kept;
}

}  // namespace

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

uint64_t mix64(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

uint64_t keyed_bits(uint64_t seed, int64_t position) {
  return mix64(mix64(seed) ^ mix64(static_cast<uint64_t>(position) + 1u));
}

double keyed_uniform(uint64_t seed, int64_t position) {
  return static_cast<double>(keyed_bits(seed, position) >> 11) * 0x1.0p-53;
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

int32_t argmax_lowest_id(std::span<const float> logits) {
  int32_t best = -1;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (std::isnan(logits[id])) continue;
    if (best < 0 || logits[id] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(id);
  }
  return best;
}

int32_t sample_keyed(std::span<const float> logits, const SamplingOptions& options, uint64_t seed,
                     int64_t position) {
  if (options.temperature == 0.0f || options.top_k == 1) return argmax_lowest_id(logits);
  const std::vector<Candidate> candidates = ranked_candidates(logits, options.temperature, options.top_k);
  if (candidates.empty()) return argmax_lowest_id(logits);
  const std::vector<double> weights = relative_weights(candidates);
  const size_t kept = kept_count(weights, options.top_p, options.min_p);
  const double total =
      std::accumulate(weights.begin(), weights.begin() + static_cast<std::ptrdiff_t>(kept), 0.0);
  const double target = keyed_uniform(seed, position) * total;
  double running = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    running += weights[i];
    if (running > target) return candidates[i].id;
  }
  return candidates[kept - 1].id;
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

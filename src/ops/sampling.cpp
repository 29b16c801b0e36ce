#include "ops/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/half.hpp"

namespace plumb::ops {

namespace {

struct Candidate {
  uint64_t key;  // keyed::rank_key: larger ranks first
  float logit;
};

// The candidates (finite logits) in rank order; only the first `keep` are ordered and returned.
std::vector<Candidate> ranked(std::span<const float> logits, int32_t top_k) {
  std::vector<Candidate> candidates;
  candidates.reserve(logits.size());
  for (size_t id = 0; id < logits.size(); ++id)
    if (std::isfinite(logits[id]))
      candidates.push_back({keyed::rank_key(logits[id], static_cast<uint32_t>(id)), logits[id]});
  const size_t keep = top_k > 0 ? std::min(candidates.size(), static_cast<size_t>(top_k)) : candidates.size();
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                    candidates.end(), [](const Candidate& a, const Candidate& b) { return a.key > b.key; });
  candidates.resize(keep);
  return candidates;
}

}  // namespace

float logit_value(const void* logits, DType dtype, int64_t at) {
  return dtype == DType::f32 ? static_cast<const float*>(logits)[at]
                             : bf16_to_f32(static_cast<const uint16_t*>(logits)[at]);
}

void read_logits_row(const void* logits, DType dtype, int64_t stride, int64_t row, std::span<float> out) {
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = logit_value(logits, dtype, row * stride + static_cast<int64_t>(k));
}

int32_t greedy_id(std::span<const float> logits) {
  int32_t best = -1;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (std::isnan(logits[id])) continue;
    if (best < 0 || logits[id] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(id);
  }
  return best;
}

int32_t draw_keyed(std::span<const float> logits, const SampleParams& params) {
  if (keyed::greedy(params)) return greedy_id(logits);
  const std::vector<Candidate> candidates = ranked(logits, params.top_k);
  if (candidates.empty()) return greedy_id(logits);
  std::vector<uint64_t> weights(candidates.size());
  uint64_t total = 0;  // W1: the top-k candidates' weight
  for (size_t i = 0; i < candidates.size(); ++i) {
    weights[i] = keyed::weight(keyed::gap(candidates[i].logit, candidates[0].logit, params.temperature));
    total += weights[i];
  }
  size_t kept = candidates.size();
  if (params.top_p < 1.0f) {
    const uint64_t reach = keyed::ceil_fraction(total, params.top_p);
    uint64_t running = 0;
    for (kept = 0; kept < candidates.size() && running < reach;) running += weights[kept++];
  }
  const uint64_t min_weight =
      params.min_p > 0.0f ? keyed::ceil_fraction(uint64_t{1} << keyed::kWeightBits, params.min_p) : 0;
  uint64_t kept_total = 0;  // W3
  for (size_t i = 0; i < kept; ++i)
    if (weights[i] >= min_weight) kept_total += weights[i];
  const uint64_t target = keyed::draw_target(kept_total, params.seed, params.position);
  uint64_t running = 0;
  for (size_t i = 0; i < kept; ++i) {
    if (weights[i] < min_weight) continue;
    running += weights[i];
    if (running > target) return static_cast<int32_t>(keyed::key_id(candidates[i].key));
  }
  PLUMB_ASSERT(false, "draw_keyed: the running weight never passed its target");
  return -1;
}

}  // namespace plumb::ops

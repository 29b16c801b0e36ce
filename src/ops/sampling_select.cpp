// The keyed draw by selection: the same id as ops::draw_keyed's sort (keyed_draw.hpp's steps), found with
// weighted quickselects over the rank keys in expected linear time. Integer sums make the order in which
// a partition visits the candidates irrelevant.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "ops/sampling.hpp"

namespace plumb::ops {

namespace {

struct Member {
  uint64_t key;  // keyed::rank_key: larger ranks first; distinct ids give distinct keys
  uint64_t weight;
};

// The largest key K such that the members with key >= K carry at least `target` in weight; the members'
// total must reach target >= 1.
uint64_t select_key(std::vector<Member>& members, uint64_t target) {
  auto first = members.begin(), last = members.end();
  uint64_t above = 0;  // carried by members ranked above [first, last)
  while (true) {
    PLUMB_ASSERT(first != last, "select_key: the members' total never reached the target");
    const uint64_t pivot = (first + (last - first) / 2)->key;
    const auto upper_end = std::partition(first, last, [pivot](const Member& m) { return m.key > pivot; });
    const auto lower_begin =
        std::partition(upper_end, last, [pivot](const Member& m) { return m.key == pivot; });
    uint64_t upper = 0;
    for (auto it = first; it != upper_end; ++it) upper += it->weight;
    if (above + upper >= target) {
      last = upper_end;
      continue;
    }
    above += upper + upper_end->weight;
    if (above >= target) return pivot;
    first = lower_begin;
  }
}

// Keeps the members ranked at or above `lower` whose weight is at least `min_weight`.
void keep(std::vector<Member>& members, uint64_t lower, uint64_t min_weight) {
  std::erase_if(members, [&](const Member& m) { return m.key < lower || m.weight < min_weight; });
}

uint64_t total_weight(const std::vector<Member>& members) {
  uint64_t total = 0;
  for (const Member& m : members) total += m.weight;
  return total;
}

}  // namespace

int32_t draw_keyed_by_selection(std::span<const float> logits, const SampleParams& params) {
  if (keyed::greedy(params)) return greedy_id(logits);
  std::vector<Member> members;
  members.reserve(logits.size());
  float top = -INFINITY;
  for (size_t id = 0; id < logits.size(); ++id)
    if (std::isfinite(logits[id])) {
      members.push_back({keyed::rank_key(logits[id], static_cast<uint32_t>(id)), 0});
      top = std::max(top, logits[id]);
    }
  if (members.empty()) return greedy_id(logits);
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < members.size()) {
    // A heap of top_k: most candidates fail one comparison (faster than a selection for small top_k).
    const auto kept = members.begin() + params.top_k;
    std::partial_sort(members.begin(), kept, members.end(),
                      [](const Member& a, const Member& b) { return a.key > b.key; });
    members.erase(kept, members.end());
  }
  for (Member& m : members)
    m.weight = keyed::weight(keyed::gap(keyed::key_logit(m.key), top, params.temperature));
  if (params.top_p < 1.0f)
    keep(members, select_key(members, keyed::ceil_fraction(total_weight(members), params.top_p)), 0);
  if (params.min_p > 0.0f)
    keep(members, 0, keyed::ceil_fraction(uint64_t{1} << keyed::kWeightBits, params.min_p));
  const uint64_t target = keyed::draw_target(total_weight(members), params.seed, params.position);
  return static_cast<int32_t>(keyed::key_id(select_key(members, target + 1)));
}

}  // namespace plumb::ops

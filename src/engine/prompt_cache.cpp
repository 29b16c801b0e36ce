#include "engine/prompt_cache.hpp"

#include <algorithm>

namespace plumb::engine {

int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t most = std::min(a.size(), b.size());
  size_t shared = 0;
  while (shared < most && a[shared] == b[shared]) ++shared;
  return static_cast<int64_t>(shared);
}

Result<std::optional<PromptCache::Hit>> PromptCache::resume(std::span<const int32_t> prompt) {
  const int64_t most = static_cast<int64_t>(prompt.size()) - 1;
  auto best = entries_.end();
  int64_t best_resumed = 0;
  for (auto entry = entries_.begin(); entry != entries_.end(); ++entry) {
    const int64_t resumed = std::min(common_prefix(entry->tokens, prompt), most);
    if (resumed > best_resumed && entry->state->can_resume_at(resumed)) {
      best = entry;
      best_resumed = resumed;
    }
  }
  if (best == entries_.end()) return std::optional<Hit>();
  entries_.splice(entries_.begin(), entries_, best);
  auto copy = best->state->clone();
  if (!copy.ok()) return copy.error();
  Hit hit{std::move(*copy), best_resumed};
  if (hit.state->end() > best_resumed) {
    const Status rolled = hit.state->roll_back(best_resumed);
    if (!rolled.ok()) return rolled.error();
  }
  return std::optional<Hit>(std::move(hit));
}

void PromptCache::keep(std::vector<int32_t> tokens, std::unique_ptr<LaneState> state) {
  if (budget_bytes_ <= 0 || tokens.empty() || state->end() != static_cast<int64_t>(tokens.size())) return;
  // A state larger than the whole budget is dropped rather than emptying the cache for nothing.
  if (state->bytes() > budget_bytes_) return;
  // An entry whose tokens the new one starts with, and that it can roll back to, is no longer needed.
  std::erase_if(entries_, [&](const Entry& entry) {
    const auto length = static_cast<int64_t>(entry.tokens.size());
    return length <= static_cast<int64_t>(tokens.size()) && common_prefix(entry.tokens, tokens) == length &&
           state->can_resume_at(length);
  });
  const int64_t bytes = state->bytes();
  entries_.push_front(Entry{std::move(tokens), std::move(state), bytes});
  evict_to_budget();
}

void PromptCache::evict_to_budget() {
  while (!entries_.empty() && bytes() > budget_bytes_) {
    entries_.pop_back();
    ++evictions_;
  }
}

int64_t PromptCache::bytes() const {
  int64_t total = 0;
  for (const Entry& entry : entries_) total += entry.bytes;
  return total;
}

}  // namespace plumb::engine

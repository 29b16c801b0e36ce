#pragma once
// Kept stream states keyed by the tokens they computed. A new prompt resumes from the kept state that shares
// its longest usable prefix, always leaving at least one prompt row to compute (its logits give the first
// draw); entries are evicted least recently used beyond a byte budget.
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "engine/lane_model.hpp"

namespace plumb::engine {

class PromptCache {
 public:
  explicit PromptCache(int64_t budget_bytes) : budget_bytes_(budget_bytes) {}

  struct Hit {
    std::unique_ptr<LaneState> state;  // a copy of the kept state, rolled back to `resumed` positions
    int64_t resumed = 0;
  };
  // The longest usable prefix of `prompt` (at most prompt.size() - 1 positions), or nullopt when none.
  Result<std::optional<Hit>> resume(std::span<const int32_t> prompt);
  // Keeps `state`, which holds positions [0, tokens.size()); replaces an entry with the same tokens and
  // drops entries the new one can stand in for.
  void keep(std::vector<int32_t> tokens, std::unique_ptr<LaneState> state);
  void clear() { entries_.clear(); }

  int64_t bytes() const;
  int64_t entries() const { return static_cast<int64_t>(entries_.size()); }
  int64_t budget_bytes() const { return budget_bytes_; }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    std::unique_ptr<LaneState> state;
    int64_t bytes = 0;
  };
  void evict_to_budget();
  std::list<Entry> entries_;  // most recently used first
  int64_t budget_bytes_;
  uint64_t evictions_ = 0;
};

// The number of leading tokens `a` and `b` share.
int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

}  // namespace plumb::engine

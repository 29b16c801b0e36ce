#include <algorithm>

#include "engine/drafter.hpp"

namespace plumb::engine {

namespace {

// Matches longer than this are not told apart: it bounds the search on very repetitive contexts.
constexpr int64_t kLongestMatch = 64;

class CopySession final : public DraftSession {
 public:
  CopySession(int min_match, int64_t max_lookback) : min_match_(min_match), max_lookback_(max_lookback) {}
  void propose(std::span<const int32_t> context, int depth, std::vector<int32_t>& drafts) override {
    const std::vector<int32_t> copied = copy_draft(context, depth, min_match_, max_lookback_);
    drafts.insert(drafts.end(), copied.begin(), copied.end());
  }

 private:
  int min_match_;
  int64_t max_lookback_;
};

}  // namespace

std::vector<int32_t> copy_draft(std::span<const int32_t> context, int depth, int min_match,
                                int64_t max_lookback) {
  const auto size = static_cast<int64_t>(context.size());
  if (depth <= 0 || size < 2) return {};
  const int64_t last = size - 1;
  const int64_t earliest = std::max<int64_t>(0, last - max_lookback);
  int64_t best_end = -1, best_length = 0;  // best_end: the index of the matched copy of context[last]
  for (int64_t end = last - 1; end >= earliest; --end) {
    if (context[static_cast<size_t>(end)] != context[static_cast<size_t>(last)]) continue;
    int64_t length = 1;
    while (length <= end && length < kLongestMatch &&
           context[static_cast<size_t>(end - length)] == context[static_cast<size_t>(last - length)])
      ++length;
    // Scanning from the latest occurrence, a strictly longer match is needed to replace it.
    if (length > best_length) {
      best_length = length;
      best_end = end;
      if (length == kLongestMatch) break;
    }
  }
  if (best_end < 0 || best_length < min_match) return {};
  // Past the context's end the copy continues from its own drafts: a repeating run keeps its period.
  std::vector<int32_t> drafts;
  for (int64_t i = best_end + 1; static_cast<int>(drafts.size()) < depth; ++i)
    drafts.push_back(i <= last ? context[static_cast<size_t>(i)] : drafts[static_cast<size_t>(i - last - 1)]);
  return drafts;
}

std::unique_ptr<DraftSession> CopyDrafter::open(std::span<const int32_t> prompt) {
  (void)prompt;
  return std::make_unique<CopySession>(min_match_, max_lookback_);
}

}  // namespace plumb::engine

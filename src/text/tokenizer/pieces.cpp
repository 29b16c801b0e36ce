#include "text/tokenizer/pieces.hpp"

#include <algorithm>

namespace plumb::text {

Result<SplitBehavior> parse_split_behavior(std::string_view name, std::string_view where) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return error_at(where, "split behavior", name, "is not known",
                  "Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous", name);
}

void apply_split_behavior(const std::vector<Span>& cover, SplitBehavior behavior, std::vector<Span>& kept) {
  kept.clear();
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Span& span : cover)
        if (!span.is_match) kept.push_back(span);
      return;
    case SplitBehavior::kIsolated:
      kept = cover;
      return;
    case SplitBehavior::kContiguous:
      for (const Span& span : cover) {
        if (span.is_match == previous_match && !kept.empty()) {
          kept.back().end = span.end;
        } else {
          kept.push_back(span);
        }
        previous_match = span.is_match;
      }
      return;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& span : cover) {
        if (span.is_match && !previous_match && !kept.empty()) {
          kept.back().end = span.end;
        } else {
          kept.push_back(span);
        }
        previous_match = span.is_match;
      }
      return;
    case SplitBehavior::kMergedWithNext:
      // Walks backwards: a match joins the piece that follows it.
      for (auto span = cover.rbegin(); span != cover.rend(); ++span) {
        if (span->is_match && !previous_match && !kept.empty()) {
          kept.back().begin = span->begin;
        } else {
          kept.push_back(*span);
        }
        previous_match = span->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      return;
  }
}

void PieceList::reset(std::string_view text) {
  arena.assign(text);
  pieces.clear();
  if (!text.empty()) pieces.push_back({0, static_cast<uint32_t>(text.size()), -1, true});
}

}  // namespace plumb::text

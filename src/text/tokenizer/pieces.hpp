#pragma once
// The pre-tokenized string: pieces of text kept in one arena, some already decided as added tokens.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "text/tokenizer/regex.hpp"
#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

struct Piece {
  uint32_t begin = 0;  // into PieceList::arena
  uint32_t end = 0;
  int32_t token = -1;      // an added token's id once matched; such pieces are never split or changed again
  bool at_origin = false;  // starts at byte 0 of the encoded input (Metaspace's "first" prepend scheme)
};

// How the matches of a pattern become pieces (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Result<SplitBehavior> parse_split_behavior(std::string_view name, std::string_view where);

// Keeps the spans of a cover that `behavior` keeps, merged as it merges them (empty ones included).
void apply_split_behavior(const std::vector<Span>& cover, SplitBehavior behavior, std::vector<Span>& kept);

// Covers `text` by matching code points: each matching code point alone, the runs between them as
// non-matches.
template <class Predicate>
void cover_code_points(std::string_view text, Predicate&& matches, std::vector<Span>& spans);

class PieceList {
 public:
  std::string arena;
  std::vector<Piece> pieces;

  void reset(std::string_view text);
  std::string_view text(const Piece& piece) const {
    return std::string_view(arena).substr(piece.begin, piece.end - piece.begin);
  }

  // Replaces every undecided piece by the non-empty sub-spans that `split(text, spans)` returns for it.
  template <class Split>
  Status split_each(Split&& split);

  // Replaces the text of every undecided piece by what `transform(text, at_origin, out)` writes; empty pieces
  // vanish.
  template <class Transform>
  Status transform_each(Transform&& transform);

 private:
  std::vector<Piece> next_;
  std::vector<Span> spans_;
  std::string scratch_;
};

template <class Predicate>
void cover_code_points(std::string_view text, Predicate&& matches, std::vector<Span>& spans) {
  spans.clear();
  if (text.empty()) {
    spans.push_back({0, 0, false});
    return;
  }
  uint32_t last = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto begin = static_cast<uint32_t>(pos);
    const char32_t cp = next_code_point(text, pos);
    if (!matches(cp)) continue;
    if (last < begin) spans.push_back({last, begin, false});
    spans.push_back({begin, static_cast<uint32_t>(pos), true});
    last = static_cast<uint32_t>(pos);
  }
  if (last < text.size()) spans.push_back({last, static_cast<uint32_t>(text.size()), false});
}

template <class Split>
Status PieceList::split_each(Split&& split) {
  next_.clear();
  for (const Piece& piece : pieces) {
    if (piece.token >= 0) {
      next_.push_back(piece);
      continue;
    }
    spans_.clear();
    PLUMB_TRY(split(text(piece), spans_));
    for (const Span& span : spans_) {
      if (span.begin == span.end) continue;
      next_.push_back(
          {piece.begin + span.begin, piece.begin + span.end, -1, piece.at_origin && span.begin == 0});
    }
  }
  pieces.swap(next_);
  return {};
}

template <class Transform>
Status PieceList::transform_each(Transform&& transform) {
  next_.clear();
  for (const Piece& piece : pieces) {
    if (piece.token >= 0) {
      next_.push_back(piece);
      continue;
    }
    scratch_.clear();
    PLUMB_TRY(transform(text(piece), piece.at_origin, scratch_));
    if (scratch_.empty()) continue;
    const auto begin = static_cast<uint32_t>(arena.size());
    arena += scratch_;
    next_.push_back({begin, static_cast<uint32_t>(arena.size()), -1, piece.at_origin});
  }
  pieces.swap(next_);
  return {};
}

}  // namespace plumb::text

#include "server/stop_strings.hpp"

#include <algorithm>

namespace plumb::server {

namespace {

// The longest suffix of `text` that is a proper prefix of some stop string.
size_t held_suffix(std::string_view text, const std::vector<std::string>& stops) {
  size_t keep = 0;
  for (const std::string& stop : stops) {
    const size_t longest = std::min(text.size(), stop.size() - 1);
    for (size_t length = longest; length > keep; --length) {
      if (text.substr(text.size() - length) == std::string_view(stop).substr(0, length)) {
        keep = length;
        break;
      }
    }
  }
  return keep;
}

}  // namespace

StopMatcher::Piece StopMatcher::push(std::string_view text) {
  Piece piece;
  if (stopped_) return piece;
  const size_t searched_from = held_.size();
  held_.append(text);
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    // Only a match that ends in the new text is new; earlier text was already checked.
    const size_t from = searched_from >= stop.size() ? searched_from - stop.size() + 1 : 0;
    const size_t at = held_.find(stop, from);
    if (at != std::string::npos) first = std::min(first, at);
  }
  if (first != std::string::npos) {
    piece.text = held_.substr(0, first);
    piece.stopped = stopped_ = true;
    held_.clear();
    return piece;
  }
  const size_t keep = held_suffix(held_, stops_);
  piece.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return piece;
}

std::string StopMatcher::finish() {
  std::string rest = stopped_ ? std::string() : std::move(held_);
  held_.clear();
  return rest;
}

}  // namespace plumb::server

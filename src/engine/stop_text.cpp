#include "engine/stop_text.hpp"

#include <algorithm>

namespace plumb::engine {

StopText::StopText(const text::Tokenizer& tokenizer, bool skip_special, std::vector<std::string> stop_strings)
    : decoder_(text::StreamDecoder(tokenizer, skip_special)), stops_(std::move(stop_strings)) {
  std::erase_if(stops_, [](const std::string& stop) { return stop.empty(); });
}

size_t stop_prefix_suffix(std::string_view text, const std::vector<std::string>& stops) {
  size_t longest = 0;
  for (const std::string& stop : stops) {
    const size_t most = std::min(text.size(), stop.size() - 1);
    for (size_t length = most; length > longest; --length) {
      if (text.substr(text.size() - length) == std::string_view(stop).substr(0, length)) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}

StopText::Step StopText::take(bool at_end) {
  Step step;
  size_t earliest = std::string::npos;
  for (const std::string& stop : stops_) earliest = std::min(earliest, held_.find(stop));
  if (earliest != std::string::npos) {
    step.text = held_.substr(0, earliest);
    step.stopped = true;
    held_.clear();
    return step;
  }
  const size_t keep = at_end ? 0 : stop_prefix_suffix(held_, stops_);
  step.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return step;
}

Result<StopText::Step> StopText::push(int32_t token) {
  if (!decoder_) return Step{};
  auto piece = decoder_->push(token);
  if (!piece.ok()) return piece.error();
  held_ += *piece;
  return take(false);
}

Result<StopText::Step> StopText::finish() {
  if (!decoder_) return Step{};
  auto rest = decoder_->finish();
  if (!rest.ok()) return rest.error();
  held_ += *rest;
  return take(true);
}

}  // namespace plumb::engine

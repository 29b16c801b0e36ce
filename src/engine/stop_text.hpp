#pragma once
// A stream's reply text: committed tokens go through the streaming detokenizer, and the text that could still
// be the start of a stop string is held back. A stop string ends the reply at the token whose text completes
// it, so the same token ends it whether it was drafted or not.
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::engine {

class StopText {
 public:
  StopText() = default;
  StopText(const text::Tokenizer& tokenizer, bool skip_special, std::vector<std::string> stop_strings);

  struct Step {
    std::string text;      // newly final text, safe to show
    bool stopped = false;  // a stop string was completed; the text before it has been returned
  };
  // Appends a committed token's text.
  Result<Step> push(int32_t token);
  // Flushes what the detokenizer still holds, at the reply's end.
  Result<Step> finish();
  bool active() const { return decoder_.has_value(); }

 private:
  Step take(bool at_end);
  std::optional<text::StreamDecoder> decoder_;
  std::vector<std::string> stops_;
  std::string held_;  // final text not yet returned
};

// The length of the longest suffix of `text` that is a proper prefix of one of `stops` (held back).
size_t stop_prefix_suffix(std::string_view text, const std::vector<std::string>& stops);

}  // namespace plumb::engine

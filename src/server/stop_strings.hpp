#pragma once
// Stop strings on streamed text: the reply ends just before the first occurrence of any stop string, and a
// suffix that may still become one is held back, so streamed and whole replies cut at the same byte.
#include <string>
#include <string_view>
#include <vector>

namespace plumb::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  struct Piece {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string was found; text ends right before it
  };
  Piece push(std::string_view text);
  // The held-back text, at the end of the stream.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace plumb::server

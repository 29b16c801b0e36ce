#pragma once
// Drafters propose the tokens a stream will likely commit next; the engine verifies them in the same forward
// as the stream's pending row and keeps only those equal to the keyed draw, so a drafter can change speed,
// never tokens. CopyDrafter copies from the stream's own context; model drafters (the Gemma 4 assistant,
// DFlash) will implement the same interface with their own per-stream state.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace plumb::engine {

// One stream's drafting state, opened when the stream starts and dropped when it ends.
class DraftSession {
 public:
  virtual ~DraftSession() = default;
  // Appends up to `depth` proposed tokens to follow `context` (the prompt and every committed token; the last
  // one is the stream's pending row) to `drafts`.
  virtual void propose(std::span<const int32_t> context, int depth, std::vector<int32_t>& drafts) = 0;
  // How many of the last proposal's tokens were accepted (a model drafter rolls its own state back).
  virtual void accepted(int proposed, int accepted) {
    (void)proposed;
    (void)accepted;
  }
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string_view name() const = 0;
  // A session for a stream whose sequence starts with `prompt`.
  virtual std::unique_ptr<DraftSession> open(std::span<const int32_t> prompt) = 0;
};

// Copy drafts: finds the longest suffix of the context (at least `min_match` tokens) that occurred earlier,
// preferring the latest occurrence among equally long ones, and proposes the tokens that followed it.
class CopyDrafter final : public Drafter {
 public:
  explicit CopyDrafter(int min_match = 2, int64_t max_lookback = 8192)
      : min_match_(min_match), max_lookback_(max_lookback) {}
  std::string_view name() const override { return "copies"; }
  std::unique_ptr<DraftSession> open(std::span<const int32_t> prompt) override;

 private:
  int min_match_;
  int64_t max_lookback_;
};

// The copy drafter's search, exposed for tests: up to `depth` tokens following the longest earlier match of
// the context's suffix.
std::vector<int32_t> copy_draft(std::span<const int32_t> context, int depth, int min_match,
                                int64_t max_lookback);

}  // namespace plumb::engine

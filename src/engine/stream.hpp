#pragma once
// One live request: its sequence (prompt, then committed tokens, the last of which is the pending row), its
// model state, its drafting session and acceptance, its reply text, and the reply being built. The engine's
// rounds drive it; everything here runs on the round thread.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/depth_rule.hpp"
#include "engine/drafter.hpp"
#include "engine/engine.hpp"
#include "engine/lane_model.hpp"
#include "engine/stop_text.hpp"

namespace plumb::engine {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to);

struct Stream {
  uint64_t id = 0;
  Request request;
  Sink sink;
  uint64_t seed = 0;
  std::vector<int32_t> stop_tokens;  // the request's, plus the model's eos when asked
  std::vector<int32_t> tokens;       // prompt, then committed tokens
  int64_t prompt_length = 0;
  int64_t context = 0;       // most positions this stream may hold
  int64_t needed_bytes = 0;  // its share of the KV budget, reserved while it is live
  bool reserved = false;
  std::unique_ptr<LaneState> state;
  std::unique_ptr<LaneState> prompt_snapshot;  // kept at the prompt's end when I2 does not hold
  std::unique_ptr<DraftSession> drafter;
  Acceptance acceptance;
  StopText text;
  Reply reply;
  bool finished = false;
  bool cancel_requested = false;
  int64_t idle_drafts = 0;  // rounds since a draft was last proposed (the depth rule probes now and then)

  // This round's window: the pending row and its drafts (decoding), or a prompt chunk (prefilling).
  std::vector<int32_t> window;
  int64_t window_first = 0;
  int64_t window_drafts = 0;
  bool window_is_prompt = false;

  // What this round produced, delivered (and counted in the metrics) after it.
  std::vector<int32_t> delta_tokens;
  std::string delta_text;
  double token_interval = 0.0;  // seconds per token committed this round, after the first token
  int64_t round_drafted = 0, round_accepted = 0, round_prompt_rows = 0;

  Clock::time_point submitted, admitted, first_token, last_commit;

  bool prefilling() const { return state->end() < prompt_length; }
  int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_length; }
  // Commits a drawn token: stops, text, limits. Returns false once the stream has finished.
  Status commit(int32_t token, Clock::time_point now);
  // Ends the stream with `reason` (flushing the text unless a stop string ended it).
  Status finish(FinishReason reason);
  bool is_stop_token(int32_t token) const;
};

}  // namespace plumb::engine

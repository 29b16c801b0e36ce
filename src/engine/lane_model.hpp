#pragma once
// The family side of the engine: what a model family gives the lane engine. The engine never sees a family's
// tensors; it asks for per-stream states, runs several streams' chunks in one forward, and copies, rolls back
// and measures states. Gemma 4 implements it in gemma4_lane.hpp; later families plug in the same way.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "ops/keyed_draw.hpp"

namespace plumb::engine {

// One stream's model state (its KV cache): positions [0, end()) have been computed.
class LaneState {
 public:
  virtual ~LaneState() = default;
  virtual int64_t end() const = 0;
  // Bytes held on the device.
  virtual int64_t bytes() const = 0;
  // Forgets positions from `end` on; end <= end().
  virtual Status roll_back(int64_t end) = 0;
  // True when the state can be rolled back to `position` and continue from there (a sliding ring may have
  // overwritten what an earlier position needs).
  virtual bool can_resume_at(int64_t position) const = 0;
  // A copy on the device holding the same positions.
  virtual Result<std::unique_ptr<LaneState>> clone() const = 0;
};

// One stream's rows in a forward: `tokens` at positions first_position, first_position + 1, ...
// (first_position
// <= state->end(); a smaller one rewrites from there). `all_logits` asks for every row's logits, otherwise
// only the last row's when `last_logits` is set. Those rows are drawn on the device under `draw` (its
// position ignored: each row's draw is for the position after the row's).
struct LaneChunk {
  LaneState* state = nullptr;
  std::span<const int32_t> tokens;
  int64_t first_position = 0;
  bool all_logits = false;
  bool last_logits = false;
  ops::SampleParams draw;
};

// The requested rows, in chunk order: their keyed draws, or (from a model that does not draw) their logits,
// which the engine then draws from on the host.
struct LaneLogits {
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<int32_t> draws;  // [rows]
  std::vector<float> values;   // [rows, vocab] when draws is empty
  std::span<const float> row(int64_t r) const {
    return std::span<const float>(values).subspan(static_cast<size_t>(r * vocab), static_cast<size_t>(vocab));
  }
};

class LaneModel {
 public:
  virtual ~LaneModel() = default;
  virtual std::string_view family() const = 0;
  virtual std::string_view backend_name() const = 0;
  virtual int64_t vocab() const = 0;
  // The longest sequence (prompt + reply) a stream may hold.
  virtual int64_t context() const = 0;
  // The model's end-of-sequence ids (generation_config / config eos_token_id).
  virtual std::vector<int32_t> eos_tokens() const = 0;
  // I2 holds for this family on this backend: decode rows equal prompt rows, so a kept state may be resumed
  // from a point after a reply. When false, the engine keeps states only at prompt ends.
  virtual bool path_invariant() const = 0;
  // A fresh state whose chunks hold at most `max_chunk_rows` rows.
  virtual Result<std::unique_ptr<LaneState>> new_state(int64_t max_chunk_rows) = 0;
  // Device bytes a state created with `max_chunk_rows` needs to hold `positions` positions.
  virtual int64_t state_bytes(int64_t positions, int64_t max_chunk_rows) const = 0;
  // Device bytes still free for states (the backend's free_memory_bytes), or -1 where unknown.
  virtual int64_t free_device_bytes() const { return -1; }
  // Runs the chunks (of distinct states) as one batch; each state advances to first_position + rows. On
  // failure every state is left at or before its chunk's first_position.
  virtual Result<LaneLogits> forward(std::span<const LaneChunk> chunks) = 0;
};

}  // namespace plumb::engine

#pragma once
// One stream's KV cache: per layer, keys and values stored at slot = position % capacity. Sliding layers keep
// a ring of window - 1 + max_chunk_rows slots (what a chunk of up to max_chunk_rows rows needs); global
// layers grow, doubling, so that every position seen so far stays.
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "models/gemma4/config.hpp"
#include "ops/backend.hpp"
#include "ops/ops.hpp"

namespace plumb::gemma4 {

struct LayerCache {
  ops::DeviceTensor keys;    // bf16 [capacity, kv_heads, head_dim]
  ops::DeviceTensor values;  // bf16 [capacity, kv_heads, head_dim]
  int64_t capacity = 0;
  bool sliding = false;
};

class StreamCache {
 public:
  // Allocates every layer; global layers start with `initial_positions` slots.
  static Result<StreamCache> create(const Config& config, ops::Backend& backend, int64_t max_chunk_rows,
                                    int64_t initial_positions = 256);

  int64_t end() const { return end_; }  // positions [0, end) have been computed
  int64_t max_chunk_rows() const { return max_chunk_rows_; }
  const std::vector<LayerCache>& layers() const { return layers_; }

  // Checks that a chunk of `rows` rows starting at `first_position` can run: first_position <= end, rows <=
  // max_chunk_rows, and every sliding layer still holds the window before first_position (a rollback may not
  // reach back past what the ring kept). Grows global layers to hold first_position + rows positions, and
  // counts the chunk's slots as written from here on (a failed forward may have written them).
  Status prepare(ops::Backend& backend, int64_t first_position, int64_t rows);
  // The layer's cache as the ops see it, with `end` positions written.
  ops::KvView view(size_t layer, int64_t end) const;
  // Forgets positions from `end` on (rejected drafts); end <= end().
  Status roll_back(int64_t end);
  // Records a computed chunk: positions [0, first_position + rows) are now present (called by the forward).
  void commit(int64_t first_position, int64_t rows);
  // True when the stream can roll back to `position` and continue: position <= end and every sliding ring
  // still holds the window before it, judged from the highest position ever written, not from end (ring
  // slots past a rolled-back end were overwritten all the same).
  bool can_resume_at(int64_t position) const;
  // A copy on the device holding the same positions.
  Result<StreamCache> clone(ops::Backend& backend) const;
  // Bytes held on the device.
  int64_t bytes() const;
  // Bytes a stream created with `max_chunk_rows` holds once it has `positions` positions (global layers grown
  // by doubling from `initial_positions`).
  static int64_t bytes_for(const Config& config, int64_t positions, int64_t max_chunk_rows,
                           int64_t initial_positions = 256);

 private:
  Status grow(ops::Backend& backend, LayerCache& layer, int64_t positions);
  // Whether sliding layer `layer` still holds the window a row at `position` needs.
  bool window_kept(size_t layer, int64_t position) const;
  // The oldest position sliding layer `layer` still holds.
  int64_t oldest_kept(size_t layer) const;
  std::vector<LayerCache> layers_;
  std::vector<int64_t> windows_;
  int64_t end_ = 0;
  int64_t written_end_ = 0;  // one past the highest position whose slots were ever written
  int64_t max_chunk_rows_ = 0;
};

}  // namespace plumb::gemma4

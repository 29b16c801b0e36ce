#pragma once
// Forms whose calls are several streams' rows, each stream with a cache of its own (kv_write and head_norms
// with caches): segment s of a call holds its stream's rows and names its keys and values caches, which are
// outputs s.cache and s.cache + 1 of [slots, kv_heads, dim]; row r goes to slot positions[r] % slots.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "contract/call.hpp"
#include "contract/form.hpp"
#include "contract/inputs.hpp"
#include "contract/span.hpp"

namespace plumb::contract::forms {

struct StreamCaches {
  int64_t slots, kv_heads, dim;
  size_t positions;  // the call's input holding each row's position

  int64_t width() const { return kv_heads * dim; }

  // Streams of 1 to 3 consecutive positions (one row each from 64 rows, past a CUDA kernel's segment table),
  // and from 5 rows an empty stream second, added to `call` with their caches; a stream's first position is
  // in [first_low, first_high], or it ends at `last` for the extremes stress. The rows' positions are then
  // the call's input "positions", which must be input number `positions`.
  void add_streams(Call& call, const CallRequest& request, Rng& rng, int64_t first_low, int64_t first_high,
                   int64_t last) const;
  // A stream of rows [first_row, first_row + rows) whose cache ends at `end`, with its two caches.
  void add_stream(Call& call, int64_t first_row, int64_t rows, int64_t end) const;
  // These rows of other calls, each run of rows from one stream of one call a stream of its own: the inputs
  // concatenated, `outputs` adding the per-row outputs, then the streams.
  Call assemble(std::span<const RowRef> rows, const std::function<void(Call&)>& outputs) const;
  // Row `row`'s slot in its stream's keys and values.
  std::vector<OutputBytes> row_bytes(const Call& call, int64_t row) const;
  // Row `row`'s bytes of the call's first `row_outputs` outputs (those made per row), then its slot's.
  std::vector<OutputBytes> row_and_slot_bytes(const Call& call, int64_t row, size_t row_outputs) const;
  // Sets the caches' ranges in `expected`: untouched, but for each row's slot, whose element k of the keys
  // (written 0) or values (1) is row_span(written, row, k).
  void expect(const Call& call, std::vector<std::vector<Span>>& expected,
              const std::function<Span(int written, int64_t row, int64_t k)>& row_span) const;
};

// The stream holding `row` (empty streams hold none).
const Segment& stream_of(const Call& call, int64_t row);

}  // namespace plumb::contract::forms

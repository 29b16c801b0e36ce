#include "contract/forms/streams.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "core/error.hpp"

namespace plumb::contract::forms {

void StreamCaches::add_streams(Call& call, const CallRequest& request, Rng& rng, int64_t first_low,
                               int64_t first_high, int64_t last) const {
  PLUMB_ASSERT(call.inputs.size() == positions, "the positions go after the call's other inputs");
  std::vector<int32_t> rows_positions;
  for (int64_t first_row = 0; first_row < request.rows;) {
    const int64_t most = request.rows >= 64 ? 1 : std::min<int64_t>(3, request.rows - first_row);
    const int64_t length = call.segments.size() == 1 && request.rows >= 5 ? 0 : rng.integer(1, most);
    const int64_t first =
        request.inputs == Inputs::extremes ? last - length + 1 : rng.integer(first_low, first_high);
    for (int64_t r = 0; r < length; ++r) rows_positions.push_back(static_cast<int32_t>(first + r));
    add_stream(call, first_row, length, first + length);
    first_row += length;
  }
  call.inputs.push_back(i32_data("positions", {request.rows}, rows_positions, true));
}

void StreamCaches::add_stream(Call& call, int64_t first_row, int64_t rows, int64_t end) const {
  const auto index = call.segments.size();
  call.segments.push_back({first_row, rows, static_cast<int>(call.outputs.size()), end});
  for (const char* tensor : {"cache_keys", "cache_values"})
    call.outputs.push_back(
        HostData::zeros(fmt::format("{}[{}]", tensor, index), DType::bf16, {slots, kv_heads, dim}, false));
}

Call StreamCaches::assemble(std::span<const RowRef> rows, const std::function<void(Call&)>& outputs) const {
  std::map<const Call*, Call> inputs_only;
  std::vector<RowRef> refs;
  for (const RowRef& ref : rows) {
    if (!inputs_only.count(ref.call)) {
      Call& copy = inputs_only[ref.call];
      copy.inputs_kind = ref.call->inputs_kind;
      copy.seed = ref.call->seed;
      copy.rows = ref.call->rows;
      copy.row_seeds = ref.call->row_seeds;
      copy.inputs = ref.call->inputs;
    }
    refs.push_back({&inputs_only[ref.call], ref.row});
  }
  Call batch = concat_rows(refs);
  outputs(batch);
  const Segment* previous = nullptr;
  for (size_t r = 0; r < rows.size(); ++r) {
    const Segment* source = &stream_of(*rows[r].call, rows[r].row);
    const int64_t end = static_cast<int64_t>(batch.inputs[positions].value(static_cast<int64_t>(r))) + 1;
    if (source == previous) {
      batch.segments.back().rows += 1;
      batch.segments.back().end = end;
    } else {
      add_stream(batch, static_cast<int64_t>(r), 1, end);
    }
    previous = source;
  }
  return batch;
}

std::vector<OutputBytes> StreamCaches::row_bytes(const Call& call, int64_t row) const {
  const Segment& segment = stream_of(call, row);
  const int64_t slot = static_cast<int64_t>(call.inputs[positions].value(row)) % slots;
  const auto bytes = static_cast<size_t>(width()) * 2;
  const auto offset = static_cast<size_t>(slot) * bytes;
  return {{segment.cache, offset, bytes}, {segment.cache + 1, offset, bytes}};
}

std::vector<OutputBytes> StreamCaches::row_and_slot_bytes(const Call& call, int64_t row,
                                                          size_t row_outputs) const {
  std::vector<OutputBytes> bytes = row_output_bytes(call, row);
  bytes.resize(row_outputs);
  for (const OutputBytes& slot : row_bytes(call, row)) bytes.push_back(slot);
  return bytes;
}

void StreamCaches::expect(const Call& call, std::vector<std::vector<Span>>& expected,
                          const std::function<Span(int written, int64_t row, int64_t k)>& row_span) const {
  for (const Segment& segment : call.segments)
    for (int written = 0; written < 2; ++written) {
      std::vector<Span>& cache = expected[static_cast<size_t>(segment.cache + written)];
      cache.assign(static_cast<size_t>(slots * width()), Span::untouched());
      for (int64_t r = segment.first_row; r < segment.first_row + segment.rows; ++r) {
        const int64_t slot = static_cast<int64_t>(call.inputs[positions].value(r)) % slots;
        for (int64_t k = 0; k < width(); ++k)
          cache[static_cast<size_t>(slot * width() + k)] = row_span(written, r, k);
      }
    }
}

const Segment& stream_of(const Call& call, int64_t row) {
  for (const Segment& segment : call.segments)
    if (row >= segment.first_row && row < segment.first_row + segment.rows) return segment;
  PLUMB_ASSERT(false, "every row belongs to a stream");
  return call.segments.front();
}

}  // namespace plumb::contract::forms

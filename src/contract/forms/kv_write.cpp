// Forms of kv_write: key and value rows copied bit for bit to slot position % capacity; every other slot
// keeps what it held (the poison), so gate 1 also catches a write to the wrong slot. The streams forms write
// many streams' rows, each run of rows to its own cache, in one launch (a forward's decode step).
#include <map>
#include <set>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/registry.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {
namespace {

constexpr int64_t kLastPosition = 2147483647;  // the largest i32 position

// A call with the request's key and value rows [rows, kv_heads, dim] as its first two inputs.
Call key_value_rows(const CallRequest& request, Rng& rng, int64_t kv_heads, int64_t dim) {
  Call call = empty_call(request);
  const Shape rows{request.rows, kv_heads, dim};
  const int64_t width = kv_heads * dim;
  for (const char* name : {"keys", "values"})
    call.inputs.push_back(
        bf16_data(name, rows, activations(request.inputs, rng, request.rows, width, 1.0), true));
  return call;
}

class KvWriteForm final : public Form {
 public:
  KvWriteForm(std::string name, int64_t kv_heads, int64_t dim, int64_t capacity)
      : Form(
            "kv_write", std::move(name),
            fmt::format("rows [rows, {}, {}] -> cache [{}, {}, {}]", kv_heads, dim, capacity, kv_heads, dim)),
        kv_heads_(kv_heads),
        dim_(dim),
        capacity_(capacity) {
    writes_every_output = false;
    stresses = {Inputs::extremes};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = key_value_rows(request, rng, kv_heads_, dim_);
    // Consecutive positions of one stream; the extremes stress ends at the largest i32 position.
    const int64_t first =
        request.inputs == Inputs::extremes ? kLastPosition - request.rows + 1 : rng.integer(0, 300000);
    std::vector<int32_t> positions(static_cast<size_t>(request.rows));
    for (int64_t r = 0; r < request.rows; ++r)
      positions[static_cast<size_t>(r)] = static_cast<int32_t>(first + r);
    call.inputs.push_back(i32_data("positions", {request.rows}, positions, true));
    call.outputs.push_back(HostData::zeros("cache_keys", DType::bf16, {capacity_, kv_heads_, dim_}, false));
    call.outputs.push_back(HostData::zeros("cache_values", DType::bf16, {capacity_, kv_heads_, dim_}, false));
    return call;
  }

  // Rows keep their positions unless an earlier row of the batch took the slot; then they move on.
  Call assemble(std::span<const RowRef> rows) const override {
    Call batch = concat_rows(rows);
    std::set<int64_t> taken;
    auto* positions = batch.inputs[2].as<int32_t>();
    for (int64_t r = 0; r < batch.rows; ++r) {
      while (taken.count(positions[r] % capacity_))
        positions[r] = positions[r] == kLastPosition ? 0 : positions[r] + 1;
      taken.insert(positions[r] % capacity_);
    }
    return batch;
  }

  std::vector<OutputBytes> row_bytes(const Call& call, int64_t row) const override {
    const int64_t slot = static_cast<int64_t>(call.inputs[2].value(row)) % capacity_;
    const auto bytes = static_cast<size_t>(kv_heads_ * dim_) * 2;
    return {{0, static_cast<size_t>(slot) * bytes, bytes}, {1, static_cast<size_t>(slot) * bytes, bytes}};
  }

  Status launch(ops::Backend& backend, const Call& call, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    int64_t end = 0;
    for (int64_t r = 0; r < call.rows; ++r)
      end = std::max(end, static_cast<int64_t>(call.inputs[2].value(r)) + 1);
    return ops::kv_write(backend, ops::KvView{out[0], out[1], end}, in[2], in[0], in[1]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const int64_t width = kv_heads_ * dim_;
    std::vector<std::vector<Span>> caches(
        2, std::vector<Span>(static_cast<size_t>(capacity_ * width), Span::untouched()));
    for (int64_t r = 0; r < call.rows; ++r) {
      const int64_t slot = static_cast<int64_t>(call.inputs[2].value(r)) % capacity_;
      for (size_t t = 0; t < 2; ++t)
        for (int64_t k = 0; k < width; ++k)
          caches[t][static_cast<size_t>(slot * width + k)] = exact_at(call.inputs[t], r * width + k);
    }
    return caches;
  }

 private:
  int64_t kv_heads_;
  int64_t dim_;
  int64_t capacity_;
};

// A call is several streams' rows: a run of 1 to 3 consecutive positions per stream (one row each from 64
// rows on, past a CUDA kernel's segment table), and from 5 rows an empty stream second. Outputs 2s and 2s + 1
// are segment s's cache; a stream's cache holds kStreamSlots slots.
class KvWriteStreamsForm final : public Form {
 public:
  static constexpr int64_t kStreamSlots = 8;

  KvWriteStreamsForm(std::string name, int64_t kv_heads, int64_t dim)
      : Form("kv_write", std::move(name),
             fmt::format("rows [rows, {}, {}] -> a cache [{}, {}, {}] per stream", kv_heads, dim,
                         kStreamSlots, kv_heads, dim)),
        kv_heads_(kv_heads),
        dim_(dim) {
    writes_every_output = false;
    batch_rows = {1, 2, 5, 16, 80};
    stresses = {Inputs::extremes};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = key_value_rows(request, rng, kv_heads_, dim_);
    std::vector<int32_t> positions;
    for (int64_t first_row = 0; first_row < request.rows;) {
      const int64_t most = request.rows >= 64 ? 1 : std::min<int64_t>(3, request.rows - first_row);
      const int64_t length = call.segments.size() == 1 && request.rows >= 5 ? 0 : rng.integer(1, most);
      // The extremes stress ends every stream at the largest i32 position.
      const int64_t first =
          request.inputs == Inputs::extremes ? kLastPosition - length + 1 : rng.integer(0, 300000);
      for (int64_t r = 0; r < length; ++r) positions.push_back(static_cast<int32_t>(first + r));
      add_segment(call, first_row, length, first + length);
      first_row += length;
    }
    call.inputs.push_back(i32_data("positions", {request.rows}, positions, true));
    return call;
  }

  // Each run of rows from one stream of one source call becomes a stream with its own cache.
  Call assemble(std::span<const RowRef> rows) const override {
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
    const Segment* previous = nullptr;
    for (size_t r = 0; r < rows.size(); ++r) {
      const Segment* source = &segment_of(*rows[r].call, rows[r].row);
      const int64_t end = static_cast<int64_t>(batch.inputs[2].value(static_cast<int64_t>(r))) + 1;
      if (source == previous) {
        batch.segments.back().rows += 1;
        batch.segments.back().end = end;
      } else {
        add_segment(batch, static_cast<int64_t>(r), 1, end);
      }
      previous = source;
    }
    return batch;
  }

  std::vector<OutputBytes> row_bytes(const Call& call, int64_t row) const override {
    const Segment& segment = segment_of(call, row);
    const int64_t slot = static_cast<int64_t>(call.inputs[2].value(row)) % kStreamSlots;
    const auto bytes = static_cast<size_t>(kv_heads_ * dim_) * 2;
    const auto offset = static_cast<size_t>(slot) * bytes;
    return {{segment.cache, offset, bytes}, {segment.cache + 1, offset, bytes}};
  }

  Status launch(ops::Backend& backend, const Call& call, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::kv_write(backend, kv_segments(call.segments, out), in[2], in[0], in[1]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const int64_t width = kv_heads_ * dim_;
    std::vector<std::vector<Span>> caches(
        call.outputs.size(), std::vector<Span>(static_cast<size_t>(kStreamSlots * width), Span::untouched()));
    for (const Segment& segment : call.segments)
      for (int64_t r = segment.first_row; r < segment.first_row + segment.rows; ++r) {
        const int64_t slot = static_cast<int64_t>(call.inputs[2].value(r)) % kStreamSlots;
        for (size_t t = 0; t < 2; ++t)
          for (int64_t k = 0; k < width; ++k)
            caches[static_cast<size_t>(segment.cache) + t][static_cast<size_t>(slot * width + k)] =
                exact_at(call.inputs[t], r * width + k);
      }
    return caches;
  }

 private:
  void add_segment(Call& call, int64_t first_row, int64_t rows, int64_t end) const {
    const auto index = call.segments.size();
    call.segments.push_back({first_row, rows, static_cast<int>(call.outputs.size()), end});
    for (const char* tensor : {"cache_keys", "cache_values"})
      call.outputs.push_back(HostData::zeros(fmt::format("{}[{}]", tensor, index), DType::bf16,
                                             {kStreamSlots, kv_heads_, dim_}, false));
  }

  // The stream holding `row` (empty streams hold none).
  static const Segment& segment_of(const Call& call, int64_t row) {
    for (const Segment& segment : call.segments)
      if (row >= segment.first_row && row < segment.first_row + segment.rows) return segment;
    PLUMB_ASSERT(false, "every row belongs to a stream");
    return call.segments.front();
  }

  int64_t kv_heads_;
  int64_t dim_;
};

}  // namespace

void register_kv_write_forms(Registry& registry) {
  for (const ModelShape& model : {kGemma12b, kGemma31b}) {
    const std::string m = model.name;
    registry.forms.push_back(std::make_unique<KvWriteForm>("kv_write/" + m + "-sliding",
                                                           model.sliding_kv_heads, model.sliding_head_dim,
                                                           ops::kv_capacity(kSlidingWindow, 16)));
    registry.forms.push_back(std::make_unique<KvWriteForm>("kv_write/" + m + "-global", model.global_kv_heads,
                                                           model.global_head_dim, 1024));
    registry.forms.push_back(std::make_unique<KvWriteStreamsForm>(
        "kv_write/" + m + "-sliding-streams", model.sliding_kv_heads, model.sliding_head_dim));
    registry.forms.push_back(std::make_unique<KvWriteStreamsForm>(
        "kv_write/" + m + "-global-streams", model.global_kv_heads, model.global_head_dim));
  }
}

}  // namespace plumb::contract::forms

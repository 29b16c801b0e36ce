// Forms of kv_write: key and value rows copied bit for bit to slot position % capacity; every other slot
// keeps what it held (the poison), so gate 1 also catches a write to the wrong slot. The streams forms write
// many streams' rows, each run of rows to its own cache, in one launch (a forward's decode step).
#include <set>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/forms/streams.hpp"
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

// A call is several streams' rows (StreamCaches' streams), each stream's cache of kStreamSlots slots.
class KvWriteStreamsForm final : public Form {
 public:
  static constexpr int64_t kStreamSlots = 8;

  KvWriteStreamsForm(std::string name, int64_t kv_heads, int64_t dim)
      : Form("kv_write", std::move(name),
             fmt::format("rows [rows, {}, {}] -> a cache [{}, {}, {}] per stream", kv_heads, dim,
                         kStreamSlots, kv_heads, dim)),
        streams_{kStreamSlots, kv_heads, dim, 2} {
    writes_every_output = false;
    batch_rows = {1, 2, 5, 16, 80};
    stresses = {Inputs::extremes};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = key_value_rows(request, rng, streams_.kv_heads, streams_.dim);
    // The extremes stress ends every stream at the largest i32 position.
    streams_.add_streams(call, request, rng, 0, 300000, kLastPosition);
    return call;
  }

  Call assemble(std::span<const RowRef> rows) const override {
    return streams_.assemble(rows, [](Call&) {});
  }

  std::vector<OutputBytes> row_bytes(const Call& call, int64_t row) const override {
    return streams_.row_bytes(call, row);
  }

  Status launch(ops::Backend& backend, const Call& call, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::kv_write(backend, kv_segments(call.segments, out), in[2], in[0], in[1]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    std::vector<std::vector<Span>> caches(call.outputs.size());
    streams_.expect(call, caches, [&](int written, int64_t r, int64_t k) {
      return exact_at(call.inputs[static_cast<size_t>(written)], r * streams_.width() + k);
    });
    return caches;
  }

 private:
  StreamCaches streams_;
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

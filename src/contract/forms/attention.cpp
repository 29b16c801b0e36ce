// Forms of attention over per-stream caches, with their ranges: scores as fp32 dot products in any order, the
// max and exp(s - max) within expf's ulps, the sum of exps in fp32, p = bf16(e / l), out = bf16(sum p v).
// A call is one stream's prompt chunk; gate 2 moves its rows into batches of other streams and alone, where
// a row's segment ends at its own position (the decode form), so I1 and I2 are both checked.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/parallel.hpp"
#include "contract/registry.hpp"
#include "core/half.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {
namespace {

constexpr uint16_t kAbsentSlot = 0x7fc0;  // NaN: a kernel that reads a slot it must not read shows it

struct AttentionShape {
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t dim = 0;
  int64_t window = 0;  // 0: global
};

class AttentionForm final : public Form {
 public:
  AttentionForm(std::string name, AttentionShape shape)
      : Form("attention", std::move(name),
             fmt::format("q [rows, {}, {}], kv heads {}, {}", shape.heads, shape.dim, shape.kv_heads,
                         shape.window > 0 ? fmt::format("sliding window {}", shape.window) : "global")),
        shape_(shape) {
    batch_rows = {1, 2, 5, 16};
    shape_rows = 3;
    stresses = {Inputs::equal_scores};
    if (shape.window == 0 && shape.kv_heads == 1) stresses.push_back(Inputs::long_keys);
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    const int64_t capacity = capacity_for(request.inputs);
    const auto [low, high] = first_positions(request.inputs, request.rows, capacity);
    const int64_t first = rng.integer(low, high);
    std::vector<uint16_t> q = queries(request.inputs, rng, request.rows);
    std::vector<int32_t> positions(static_cast<size_t>(request.rows));
    for (int64_t r = 0; r < request.rows; ++r)
      positions[static_cast<size_t>(r)] = static_cast<int32_t>(first + r);
    call.inputs.push_back(bf16_data("q", {request.rows, shape_.heads, shape_.dim}, q, true));
    call.inputs.push_back(i32_data("positions", {request.rows}, positions, true));
    append_cache(call, request, capacity, first + request.rows);
    call.segments.push_back({0, request.rows, 2, first + request.rows});
    call.outputs.push_back(
        HostData::zeros("out", DType::bf16, {request.rows, shape_.heads, shape_.dim}, true));
    return call;
  }

  // Rows from each source keep their source's cache; a run of rows from one source is one segment that
  // ends at its last row's position (a single row alone is the decode form).
  Call assemble(std::span<const RowRef> rows) const override {
    Call batch;
    batch.inputs_kind = rows[0].call->inputs_kind;
    batch.seed = rows[0].call->seed;
    batch.rows = static_cast<int64_t>(rows.size());
    std::vector<RowRef> no_caches(rows.begin(), rows.end());
    Call queries = concat_rows_of(no_caches, 2);
    batch.inputs = {queries.inputs[0], queries.inputs[1]};
    batch.outputs = queries.outputs;
    batch.row_seeds = queries.row_seeds;
    std::map<const Call*, int> cache_of;
    for (size_t r = 0; r < rows.size(); ++r) {
      const Call* source = rows[r].call;
      if (!cache_of.count(source)) {
        cache_of[source] = static_cast<int>(batch.inputs.size());
        batch.inputs.push_back(source->inputs[2]);
        batch.inputs.push_back(source->inputs[3]);
      }
      const int64_t end = static_cast<int64_t>(source->inputs[1].value(rows[r].row)) + 1;
      const bool continues = r > 0 && rows[r - 1].call == source;
      if (continues) {
        batch.segments.back().rows += 1;
        batch.segments.back().end = end;
      } else {
        batch.segments.push_back({static_cast<int64_t>(r), 1, cache_of[source], end});
      }
    }
    return batch;
  }

  Status launch(ops::Backend& backend, const Call& call, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::attention(backend, in[0], in[1], kv_segments(call.segments, in),
                          ops::AttentionSpec{shape_.window, 1.0f}, out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    std::vector<Span> out(static_cast<size_t>(call.outputs[0].elements()));
    std::vector<const Segment*> segment_of(static_cast<size_t>(call.rows));
    for (const Segment& segment : call.segments)
      for (int64_t r = segment.first_row; r < segment.first_row + segment.rows; ++r) segment_of[r] = &segment;
    parallel_indices(call.rows * shape_.heads, [&](int64_t item) {
      const int64_t r = item / shape_.heads;
      attend(call, *segment_of[static_cast<size_t>(r)], r, item % shape_.heads, out);
    });
    return {out};
  }

 private:
  // Gaussian queries at a scale that varies by head (0.05 to 1.35), so some heads spread their softmax over
  // many keys and others put it on a few; integers for equal scores; small ones over long caches.
  std::vector<uint16_t> queries(Inputs inputs, Rng& rng, int64_t rows) const {
    const int64_t width = shape_.heads * shape_.dim;
    if (inputs == Inputs::equal_scores) return integers_bf16(rng, rows * width, -3, 3);
    std::vector<uint16_t> q(static_cast<size_t>(rows * width));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < shape_.heads; ++h) {
        const double scale =
            inputs == Inputs::long_keys ? 0.05 : 0.05 * std::pow(3.0, static_cast<double>(h % 4));
        const std::vector<uint16_t> head = gaussian_bf16(rng, shape_.dim, scale);
        std::copy(head.begin(), head.end(), q.begin() + (r * shape_.heads + h) * shape_.dim);
      }
    return q;
  }

  int64_t capacity_for(Inputs inputs) const {
    if (shape_.window > 0) return ops::kv_capacity(shape_.window, 16);
    return inputs == Inputs::long_keys ? 8192 : 2048;
  }

  // The chunk's first position: sliding windows wrap the ring; equal scores start two rows before the
  // window fills (1/n not a power of two, then the first full windows); long keys end a long cache.
  std::pair<int64_t, int64_t> first_positions(Inputs inputs, int64_t rows, int64_t capacity) const {
    if (inputs == Inputs::long_keys) return {capacity - 64, capacity - rows};
    if (inputs == Inputs::equal_scores && shape_.window > 0) return {shape_.window - 2, shape_.window - 2};
    if (inputs == Inputs::equal_scores) return {1, capacity - rows - 64};
    return {0, shape_.window > 0 ? 3 * shape_.window : capacity - rows};
  }

  // The stream's cache after position end - 1: slot p % capacity holds position p for the last `capacity`
  // positions; other slots hold NaN. Each position's rows come from (shared seed, position) alone, so two
  // calls of one shared seed agree on every position both hold.
  void append_cache(Call& call, const CallRequest& request, int64_t capacity, int64_t end) const {
    const int64_t row = shape_.kv_heads * shape_.dim;
    std::vector<uint16_t> keys(static_cast<size_t>(capacity * row), kAbsentSlot), values(keys);
    Rng shared(request.shared_seed);
    const std::vector<uint16_t> equal_key = integers_bf16(shared, row, -3, 3);
    for (int64_t p = std::max<int64_t>(0, end - capacity); p < end; ++p) {
      Rng rng(mix_seed(request.shared_seed, static_cast<uint64_t>(p)));
      std::vector<uint16_t> k =
          request.inputs == Inputs::equal_scores ? equal_key : gaussian_bf16(rng, row, 1.0);
      std::vector<uint16_t> v = request.inputs == Inputs::gaussian ? gaussian_bf16(rng, row, 1.0)
                                                                   : integers_bf16(rng, row, -64, 64);
      std::copy(k.begin(), k.end(), keys.begin() + (p % capacity) * row);
      std::copy(v.begin(), v.end(), values.begin() + (p % capacity) * row);
    }
    call.inputs.push_back(bf16_data("keys", {capacity, shape_.kv_heads, shape_.dim}, keys, false));
    call.inputs.push_back(bf16_data("values", {capacity, shape_.kv_heads, shape_.dim}, values, false));
  }

  static Call concat_rows_of(std::span<const RowRef> rows, size_t inputs) {
    std::vector<Call> trimmed;
    trimmed.reserve(rows.size());
    std::map<const Call*, size_t> index;
    for (const RowRef& ref : rows)
      if (!index.count(ref.call)) {
        index[ref.call] = trimmed.size();
        Call copy;
        copy.inputs_kind = ref.call->inputs_kind;
        copy.seed = ref.call->seed;
        copy.rows = ref.call->rows;
        copy.row_seeds = ref.call->row_seeds;
        copy.inputs.assign(ref.call->inputs.begin(), ref.call->inputs.begin() + static_cast<long>(inputs));
        copy.outputs = ref.call->outputs;
        trimmed.push_back(std::move(copy));
      }
    std::vector<RowRef> refs;
    for (const RowRef& ref : rows) refs.push_back({&trimmed[index[ref.call]], ref.row});
    return concat_rows(refs);
  }

  void attend(const Call& call, const Segment& segment, int64_t r, int64_t h, std::vector<Span>& out) const {
    const HostData& keys = call.inputs[static_cast<size_t>(segment.cache)];
    const HostData& values = call.inputs[static_cast<size_t>(segment.cache) + 1];
    const int64_t capacity = keys.shape[0], dim = shape_.dim;
    const int64_t kv_head = h / (shape_.heads / shape_.kv_heads);
    const auto position = static_cast<int64_t>(call.inputs[1].value(r));
    const int64_t first = shape_.window > 0 ? std::max<int64_t>(0, position - shape_.window + 1) : 0;
    const auto key_offset = [&](int64_t p) { return ((p % capacity) * shape_.kv_heads + kv_head) * dim; };
    std::vector<float> q(static_cast<size_t>(dim)), k(static_cast<size_t>(dim));
    for (int64_t d = 0; d < dim; ++d)
      q[static_cast<size_t>(d)] = f32_at(call.inputs[0], (r * shape_.heads + h) * dim + d);
    std::vector<Span> scores;
    for (int64_t p = first; p <= position; ++p) {
      for (int64_t d = 0; d < dim; ++d) k[static_cast<size_t>(d)] = f32_at(keys, key_offset(p) + d);
      scores.push_back(f32_dot(q, k));  // the scale is 1.0
    }
    Span top = scores[0];
    for (const Span& s : scores)
      top = Span::around(std::max(top.mid, s.mid), std::max(top.lo, s.lo), std::max(top.hi, s.hi));
    std::vector<Span> exps;
    for (const Span& s : scores) exps.push_back(f32_exp(f32_sub(s, top)));
    // A kernel may sum the exps by key partitions, each rescaled by exp(m_part - m): per term two more expf
    // results and a product, which the chain allowance covers. A one-value total has every score at the max,
    // so every rescale is exp(0) = 1.
    const Span summed = f32_sum(exps);
    const Span total = summed.single() ? summed : f32_chain(summed, 2 * kExpUlps + 2);
    std::vector<Span> weights;
    for (const Span& e : exps) weights.push_back(bf16(f32_div(e, total)));
    std::vector<Span> terms(weights.size());
    for (int64_t d = 0; d < dim; ++d) {
      for (size_t j = 0; j < weights.size(); ++j)
        terms[j] = weights[j] * exact_at(values, key_offset(first + static_cast<int64_t>(j)) + d);
      out[static_cast<size_t>((r * shape_.heads + h) * dim + d)] = bf16(f32_sum(terms));
    }
  }

  AttentionShape shape_;
};

}  // namespace

void register_attention_forms(Registry& registry) {
  for (const ModelShape& model : {kGemma12b, kGemma31b}) {
    const std::string m = model.name;
    registry.forms.push_back(std::make_unique<AttentionForm>(
        "attention/" + m + "-sliding",
        AttentionShape{model.heads, model.sliding_kv_heads, model.sliding_head_dim, kSlidingWindow}));
    registry.forms.push_back(std::make_unique<AttentionForm>(
        "attention/" + m + "-global",
        AttentionShape{model.heads, model.global_kv_heads, model.global_head_dim, 0}));
  }
}

}  // namespace plumb::contract::forms

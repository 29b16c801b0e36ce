// The Gemma 4 text forward over a batch of stream chunks, at HF transformers' rounding points
// (docs/numerics.md): embed * bf16(sqrt(hidden)); per layer: sandwich-normed attention with q/k norms, RoPE
// and a weightless v norm, then a sandwich-normed GeGLU MLP, each added to the residual in bf16, then the
// layer scalar; final norm, the (tied) head and the soft cap.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/half.hpp"
#include "models/gemma4/model.hpp"
#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

namespace {

constexpr std::string_view kWhere = "gemma4.forward";

TensorView shaped(const ops::DeviceTensor& tensor, Shape shape) {
  return TensorView::contiguous(tensor.view.data, tensor.view.dtype, std::move(shape), tensor.view.device);
}

// Rows [first, first + count) of a row tensor.
TensorView slice_rows(const TensorView& view, int64_t first, int64_t count) {
  TensorView slice = view;
  slice.data =
      static_cast<char*>(view.data) + first * view.strides[0] * static_cast<int64_t>(dtype_size(view.dtype));
  slice.shape[0] = count;
  return slice;
}

struct Workspace {
  int64_t rows = 0;
  ops::DeviceTensor ids, positions;  // i32 [rows]
  ops::DeviceTensor h, xn, o;        // bf16 [rows, hidden]
  ops::DeviceTensor q, attn;         // bf16 [rows, widest heads * head_dim]
  ops::DeviceTensor k, v;            // bf16 [rows, widest kv_heads * head_dim]
  ops::DeviceTensor gate, up;        // bf16 [rows, intermediate]
};

Result<Workspace> allocate_workspace(const Model& model, int64_t rows) {
  ops::Backend& backend = *model.backend;
  const Config& config = model.config;
  int64_t q_width = 0, kv_width = 0;
  for (const LayerSpec& layer : config.layers) {
    q_width = std::max(q_width, layer.heads * layer.head_dim);
    kv_width = std::max(kv_width, layer.kv_heads * layer.head_dim);
  }
  Workspace space;
  space.rows = rows;
  struct Slot {
    ops::DeviceTensor* tensor;
    DType dtype;
    Shape shape;
  };
  const Slot slots[] = {
      {&space.ids, DType::i32, {rows}},
      {&space.positions, DType::i32, {rows}},
      {&space.h, DType::bf16, {rows, config.hidden}},
      {&space.xn, DType::bf16, {rows, config.hidden}},
      {&space.o, DType::bf16, {rows, config.hidden}},
      {&space.q, DType::bf16, {rows, q_width}},
      {&space.attn, DType::bf16, {rows, q_width}},
      {&space.k, DType::bf16, {rows, kv_width}},
      {&space.v, DType::bf16, {rows, kv_width}},
      {&space.gate, DType::bf16, {rows, config.intermediate}},
      {&space.up, DType::bf16, {rows, config.intermediate}},
  };
  for (const Slot& slot : slots) {
    PLUMB_TRY_ASSIGN(tensor, backend.allocate(slot.dtype, slot.shape));
    *slot.tensor = std::move(tensor);
  }
  return space;
}

// Uploads ids and positions after checking the ids against the vocabulary.
Status upload_inputs(const Model& model, std::span<const StreamChunk> chunks, Workspace& space) {
  std::vector<int32_t> ids, positions;
  for (const StreamChunk& chunk : chunks) {
    for (size_t i = 0; i < chunk.tokens.size(); ++i) {
      const int32_t id = chunk.tokens[i];
      if (id < 0 || id >= model.config.vocab)
        return error_at(kWhere, "token id at row", std::to_string(ids.size()), "is outside the vocabulary",
                        fmt::format("0 <= id < {}", model.config.vocab), std::to_string(id));
      ids.push_back(id);
      positions.push_back(static_cast<int32_t>(chunk.first_position + static_cast<int64_t>(i)));
    }
  }
  PLUMB_TRY(
      model.backend->upload(TensorView::contiguous(ids.data(), DType::i32, {space.rows}), space.ids.view));
  return model.backend->upload(TensorView::contiguous(positions.data(), DType::i32, {space.rows}),
                               space.positions.view);
}

class LayerRunner {
 public:
  LayerRunner(const Model& model, std::span<const StreamChunk> chunks, Workspace& space)
      : model_(model), backend_(*model.backend), chunks_(chunks), space_(space), rows_(space.rows) {}

  Status run(size_t index) {
    PLUMB_TRY(attention_block(index));
    PLUMB_TRY(mlp_block(index));
    const TensorView h = space_.h.view;
    return ops::scale(backend_, h, model_.weights.layers[index].layer_scalar, h);
  }

 private:
  // h += post_attention_norm(o_proj(attention(q, cache))).
  Status attention_block(size_t index) {
    const LayerSpec& spec = model_.config.layers[index];
    const LayerWeights& weights = model_.weights.layers[index];
    const float eps = model_.config.rms_norm_eps;
    const TensorView q = shaped(space_.q, {rows_, spec.heads, spec.head_dim});
    const TensorView k = shaped(space_.k, {rows_, spec.kv_heads, spec.head_dim});
    const TensorView v = shaped(space_.v, {rows_, spec.kv_heads, spec.head_dim});
    const TensorView attn = shaped(space_.attn, {rows_, spec.heads, spec.head_dim});
    const ops::RopeSpec& rope = spec.rope;
    PLUMB_TRY(ops::rms_norm(backend_, space_.h.view, &weights.input_norm, eps, space_.xn.view));
    PLUMB_TRY(ops::matmul(backend_, space_.xn.view, weights.q_proj,
                          shaped(space_.q, {rows_, spec.heads * spec.head_dim})));
    PLUMB_TRY(ops::norm_rope(backend_, q, &weights.q_norm, eps, space_.positions.view, rope, q));
    const TensorView k_flat = shaped(space_.k, {rows_, spec.kv_heads * spec.head_dim});
    PLUMB_TRY(ops::matmul(backend_, space_.xn.view, weights.k_proj, k_flat));
    if (spec.k_eq_v) {
      PLUMB_TRY(ops::rms_norm(backend_, k, nullptr, eps, v));  // values: the unit-RMS raw keys, no RoPE
    } else {
      PLUMB_TRY(ops::matmul(backend_, space_.xn.view, weights.v_proj,
                            shaped(space_.v, {rows_, spec.kv_heads * spec.head_dim})));
      PLUMB_TRY(ops::rms_norm(backend_, v, nullptr, eps, v));
    }
    PLUMB_TRY(ops::norm_rope(backend_, k, &weights.k_norm, eps, space_.positions.view, rope, k));
    std::vector<ops::KvSegment> segments;
    int64_t first_row = 0;
    for (const StreamChunk& chunk : chunks_) {
      const auto rows = static_cast<int64_t>(chunk.tokens.size());
      segments.push_back({first_row, rows, chunk.cache->view(index, chunk.first_position + rows)});
      first_row += rows;
    }
    // Every stream's keys and values in one launch, before any row attends.
    PLUMB_TRY(ops::kv_write(backend_, segments, space_.positions.view, k, v));
    PLUMB_TRY(ops::attention(backend_, q, space_.positions.view, segments, {spec.window, 1.0f}, attn));
    const TensorView attn_flat = shaped(space_.attn, {rows_, spec.heads * spec.head_dim});
    PLUMB_TRY(ops::matmul(backend_, attn_flat, weights.o_proj, space_.o.view));
    PLUMB_TRY(ops::rms_norm(backend_, space_.o.view, &weights.post_attention_norm, eps, space_.o.view));
    return ops::add(backend_, space_.h.view, space_.o.view, space_.h.view);
  }

  // h += post_feedforward_norm(down(gelu_tanh(gate(x)) * up(x))), x = pre_feedforward_norm(h).
  Status mlp_block(size_t index) {
    const LayerWeights& weights = model_.weights.layers[index];
    const float eps = model_.config.rms_norm_eps;
    PLUMB_TRY(ops::rms_norm(backend_, space_.h.view, &weights.pre_feedforward_norm, eps, space_.xn.view));
    PLUMB_TRY(ops::matmul(backend_, space_.xn.view, weights.gate_proj, space_.gate.view));
    PLUMB_TRY(ops::matmul(backend_, space_.xn.view, weights.up_proj, space_.up.view));
    PLUMB_TRY(ops::geglu(backend_, space_.gate.view, space_.up.view, space_.gate.view));
    PLUMB_TRY(ops::matmul(backend_, space_.gate.view, weights.down_proj, space_.o.view));
    PLUMB_TRY(ops::rms_norm(backend_, space_.o.view, &weights.post_feedforward_norm, eps, space_.o.view));
    return ops::add(backend_, space_.h.view, space_.o.view, space_.h.view);
  }

  const Model& model_;
  ops::Backend& backend_;
  std::span<const StreamChunk> chunks_;
  Workspace& space_;
  int64_t rows_;
};

// The head's output on the device: bf16 logits, or f32 when soft-capped.
struct HeadRows {
  int64_t rows = 0;
  ops::DeviceTensor values;
};

// The final norm is in space.xn; launches the (tied) head and the soft cap for the rows that need logits.
Result<HeadRows> launch_head(const Model& model, std::span<const StreamChunk> chunks,
                             const Workspace& space) {
  ops::Backend& backend = *model.backend;
  const int64_t vocab = model.config.vocab;
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first row, rows) of final-normed rows needing logits
  int64_t first_row = 0, logit_rows = 0;
  for (const StreamChunk& chunk : chunks) {
    const auto rows = static_cast<int64_t>(chunk.tokens.size());
    std::pair<int64_t, int64_t> run{first_row, 0};
    if (chunk.logits == LogitRows::all) run = {first_row, rows};
    if (chunk.logits == LogitRows::last) run = {first_row + rows - 1, 1};
    // Adjacent runs (one row per decoding stream) go through the head as one matmul.
    if (!runs.empty() && runs.back().first + runs.back().second == run.first)
      runs.back().second += run.second;
    else if (run.second > 0)
      runs.push_back(run);
    logit_rows += chunk.logits == LogitRows::all ? rows : chunk.logits == LogitRows::last ? 1 : 0;
    first_row += rows;
  }
  HeadRows head;
  head.rows = logit_rows;
  if (logit_rows == 0) return head;
  PLUMB_TRY_ASSIGN(raw, backend.allocate(DType::bf16, {logit_rows, vocab}));
  int64_t out_row = 0;
  for (const auto& [first, rows] : runs) {
    PLUMB_TRY(ops::matmul(backend, slice_rows(space.xn.view, first, rows), model.weights.head,
                          slice_rows(raw.view, out_row, rows)));
    out_row += rows;
  }
  if (!model.config.final_logit_softcapping) {
    head.values = std::move(raw);
    return head;
  }
  PLUMB_TRY_ASSIGN(capped, backend.allocate(DType::f32, {logit_rows, vocab}));
  PLUMB_TRY(ops::soft_cap(backend, raw.view, *model.config.final_logit_softcapping, capped.view));
  head.values = std::move(capped);
  return head;
}

Result<Logits> download_logits(const Model& model, const HeadRows& head) {
  Logits logits;
  logits.rows = head.rows;
  logits.vocab = model.config.vocab;
  if (head.rows == 0) return logits;
  logits.values.resize(static_cast<size_t>(head.rows * logits.vocab));
  const TensorView host = TensorView::contiguous(logits.values.data(), DType::f32, {head.rows, logits.vocab});
  if (head.values.view.dtype == DType::f32) {
    PLUMB_TRY(model.backend->download(head.values.view, host));
    return logits;
  }
  std::vector<uint16_t> bits(logits.values.size());
  PLUMB_TRY(model.backend->download(
      head.values.view, TensorView::contiguous(bits.data(), DType::bf16, {head.rows, logits.vocab})));
  for (size_t i = 0; i < bits.size(); ++i) logits.values[i] = bf16_to_f32(bits[i]);
  return logits;
}

// Forwards of up to this many rows (decode steps, verify rounds) run as a graph per row count: their launches
// cost more than their work. Longer prompts gain nothing from a graph and would record one per length.
constexpr int64_t kGraphRows = 128;

Status check_chunks(std::span<const StreamChunk> chunks) {
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].cache == nullptr || chunks[i].tokens.empty())
      return error_at(kWhere, "chunk", std::to_string(i), "has no cache or no tokens",
                      "a cache and >= 1 token", chunks[i].cache == nullptr ? "no cache" : "no tokens");
    for (size_t j = 0; j < i; ++j)
      if (chunks[j].cache == chunks[i].cache)
        return error_at(kWhere, "chunk", std::to_string(i), "shares its stream with an earlier chunk",
                        "one chunk per stream", fmt::format("the stream of chunk {}", j));
  }
  return {};
}

// Draws on the device: each logits row's options at the position its drawn token takes, and the ids.
struct DrawRows {
  ops::DeviceTensor params;  // u8 [rows, 32]
  ops::DeviceTensor ids;     // i32 [rows]
};

// Uploads the draw options of the chunks' logits rows; no tensors when no chunk asks for draws.
Result<DrawRows> upload_draws(const Model& model, std::span<const StreamChunk> chunks) {
  std::vector<ops::SampleParams> params;
  std::optional<size_t> first_with_logits;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const StreamChunk& chunk = chunks[i];
    const auto rows = static_cast<int64_t>(chunk.tokens.size());
    const int64_t first = chunk.logits == LogitRows::all ? 0 : rows - 1;
    if (chunk.logits == LogitRows::none) continue;
    if (!first_with_logits) first_with_logits = i;
    if (chunk.draw.has_value() != chunks[*first_with_logits].draw.has_value())
      return error_at(kWhere, "chunk", std::to_string(i), "mixes draws and logits",
                      fmt::format("what chunk {} asks for", *first_with_logits),
                      chunk.draw ? "draws" : "logits");
    for (int64_t row = first; chunk.draw && row < rows; ++row) {
      params.push_back(*chunk.draw);
      params.back().position = chunk.first_position + row + 1;
    }
  }
  DrawRows draws;
  if (params.empty()) return draws;
  ops::Backend& backend = *model.backend;
  const auto rows = static_cast<int64_t>(params.size());
  const auto bytes = static_cast<int64_t>(sizeof(ops::SampleParams));
  PLUMB_TRY_ASSIGN(device_params, backend.allocate(DType::u8, {rows, bytes}));
  PLUMB_TRY(
      backend.upload(TensorView::contiguous(params.data(), DType::u8, {rows, bytes}), device_params.view));
  PLUMB_TRY_ASSIGN(ids, backend.allocate(DType::i32, {rows}));
  draws.params = std::move(device_params);
  draws.ids = std::move(ids);
  return draws;
}

Result<Logits> download_draws(const Model& model, const DrawRows& draws) {
  Logits logits;
  logits.rows = draws.ids.view.dim(0);
  logits.vocab = model.config.vocab;
  logits.draws.resize(static_cast<size_t>(logits.rows));
  PLUMB_TRY(model.backend->download(draws.ids.view,
                                    TensorView::contiguous(logits.draws.data(), DType::i32, {logits.rows})));
  return logits;
}

Result<Logits> run_chunks(const Model& model, std::span<const StreamChunk> chunks, int64_t rows) {
  PLUMB_TRY_ASSIGN(space, allocate_workspace(model, rows));
  PLUMB_TRY(upload_inputs(model, chunks, space));
  PLUMB_TRY_ASSIGN(draws, upload_draws(model, chunks));
  ops::GraphScope graph(*model.backend, rows <= kGraphRows ? rows : 0);
  const float embed_scale = static_cast<float>(std::sqrt(static_cast<double>(model.config.hidden)));
  PLUMB_TRY(ops::embed_rows(*model.backend, space.ids.view, model.weights.embed, embed_scale, space.h.view));
  LayerRunner runner(model, chunks, space);
  for (size_t index = 0; index < model.config.layers.size(); ++index) PLUMB_TRY(runner.run(index));
  PLUMB_TRY(ops::rms_norm(*model.backend, space.h.view, &model.weights.final_norm, model.config.rms_norm_eps,
                          space.xn.view));
  PLUMB_TRY_ASSIGN(head, launch_head(model, chunks, space));
  if (draws.ids.storage)
    PLUMB_TRY(ops::sample(*model.backend, head.values.view, draws.params.view, draws.ids.view));
  PLUMB_TRY(graph.finish());
  return draws.ids.storage ? download_draws(model, draws) : download_logits(model, head);
}

}  // namespace

Result<Logits> forward(const Model& model, std::span<const StreamChunk> chunks) {
  PLUMB_TRY(check_chunks(chunks));
  int64_t rows = 0;
  for (const StreamChunk& chunk : chunks) {
    PLUMB_TRY(chunk.cache->prepare(*model.backend, chunk.first_position,
                                   static_cast<int64_t>(chunk.tokens.size())));
    rows += static_cast<int64_t>(chunk.tokens.size());
  }
  auto logits = run_chunks(model, chunks, rows);
  for (const StreamChunk& chunk : chunks) {
    // A failed call may have overwritten slots from first_position on: those positions are forgotten.
    if (logits.ok())
      chunk.cache->commit(chunk.first_position, static_cast<int64_t>(chunk.tokens.size()));
    else if (chunk.cache->end() > chunk.first_position)
      (void)chunk.cache->roll_back(chunk.first_position);
  }
  return logits;
}

}  // namespace plumb::gemma4

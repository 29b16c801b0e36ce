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

// Uploads ids and positions after checking the ids against the vocabulary.
Status upload_inputs(const Model& model, std::span<const StreamChunk> chunks, const Workspace& space) {
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
  LayerRunner(const Model& model, std::span<const StreamChunk> chunks, const Workspace& space)
      : model_(model), backend_(*model.backend), chunks_(chunks), space_(space), rows_(space.rows) {}

  // The layer's input norm is already in xn; leaves the next layer's (or the final) norm of h there.
  Status run(size_t index) {
    PLUMB_TRY(attention_block(index));
    return mlp_block(index);
  }

 private:
  // h += post_attention_norm(o_proj(attention(q, cache))); xn = pre_feedforward_norm(h).
  Status attention_block(size_t index) {
    const LayerSpec& spec = model_.config.layers[index];
    const LayerWeights& weights = model_.weights.layers[index];
    const float eps = model_.config.rms_norm_eps;
    const TensorView q = shaped(space_.q, {rows_, spec.heads, spec.head_dim});
    const TensorView k = shaped(space_.k, {rows_, spec.kv_heads, spec.head_dim});
    const TensorView v = shaped(space_.v, {rows_, spec.kv_heads, spec.head_dim});
    const TensorView attn = shaped(space_.attn, {rows_, spec.heads, spec.head_dim});
    const ops::RopeSpec& rope = spec.rope;
    // q, k and v from one x, each with its own weight's bits, then their norms in place: one launch for the
    // three where the backend groups them, and the norms in their K-split reduce where it fuses them.
    const ops::MatmulMember projections[] = {
        {&weights.q_proj, shaped(space_.q, {rows_, spec.heads * spec.head_dim})},
        {&weights.k_proj, shaped(space_.k, {rows_, spec.kv_heads * spec.head_dim})},
        {&weights.v_proj, shaped(space_.v, {rows_, spec.kv_heads * spec.head_dim})}};
    std::vector<ops::KvSegment> segments;
    int64_t first_row = 0;
    for (const StreamChunk& chunk : chunks_) {
      const auto rows = static_cast<int64_t>(chunk.tokens.size());
      segments.push_back({first_row, rows, chunk.cache->view(index, chunk.first_position + rows)});
      first_row += rows;
    }
    // q and k normed and rotated, v the unit-RMS values (for k_eq_v layers the raw keys', without RoPE), and
    // every stream's keys and values written to its cache, before any row attends.
    const ops::HeadNormsOperands norms{
        q, weights.q_norm, k, weights.k_norm, spec.k_eq_v ? k : v, space_.positions.view, rope, eps, q, k, v};
    PLUMB_TRY(ops::matmul_head_norms(backend_, space_.xn.view, std::span(projections, spec.k_eq_v ? 2 : 3),
                                     norms, segments));
    PLUMB_TRY(ops::attention(backend_, q, space_.positions.view, segments, {spec.window, 1.0f}, attn));
    const TensorView attn_flat = shaped(space_.attn, {rows_, spec.heads * spec.head_dim});
    PLUMB_TRY(ops::matmul(backend_, attn_flat, weights.o_proj, space_.o.view));
    const TensorView h = space_.h.view;
    return ops::residual_norm(backend_, h, space_.o.view, weights.post_attention_norm, std::nullopt,
                              weights.pre_feedforward_norm, eps, h, space_.xn.view);
  }

  // h = (h + post_feedforward_norm(down(gelu_tanh(gate(xn)) * up(xn)))) * layer_scalar; xn = the next
  // layer's input norm of h, or the final norm after the last layer.
  Status mlp_block(size_t index) {
    const LayerWeights& weights = model_.weights.layers[index];
    const float eps = model_.config.rms_norm_eps;
    PLUMB_TRY(ops::matmul_geglu(backend_, space_.xn.view, weights.gate_proj, weights.up_proj,
                                space_.gate.view, space_.up.view, space_.gate.view));
    PLUMB_TRY(ops::matmul(backend_, space_.gate.view, weights.down_proj, space_.o.view));
    const std::vector<LayerWeights>& layers = model_.weights.layers;
    const TensorView& next_norm =
        index + 1 < layers.size() ? layers[index + 1].input_norm : model_.weights.final_norm;
    const TensorView h = space_.h.view;
    return ops::residual_norm(backend_, h, space_.o.view, weights.post_feedforward_norm, weights.layer_scalar,
                              next_norm, eps, h, space_.xn.view);
  }

  const Model& model_;
  ops::Backend& backend_;
  std::span<const StreamChunk> chunks_;
  const Workspace& space_;
  int64_t rows_;
};

// The final norm is in space.xn (the last layer's residual_norm); launches the (tied) head and the soft cap
// for the rows that need logits.
Status launch_head(const Model& model, std::span<const StreamChunk> chunks, const Workspace& space,
                   const HeadRows& head) {
  ops::Backend& backend = *model.backend;
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first row, rows) of final-normed rows needing logits
  int64_t first_row = 0;
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
    first_row += rows;
  }
  if (head.rows == 0) return {};
  int64_t out_row = 0;
  for (const auto& [first, rows] : runs) {
    PLUMB_TRY(ops::matmul(backend, slice_rows(space.xn.view, first, rows), model.weights.head,
                          slice_rows(head.raw.view, out_row, rows)));
    out_row += rows;
  }
  if (!model.config.final_logit_softcapping) return {};
  return ops::soft_cap(backend, head.raw.view, *model.config.final_logit_softcapping, head.capped.view);
}

Result<Logits> download_logits(const Model& model, const HeadRows& head) {
  Logits logits;
  logits.rows = head.rows;
  logits.vocab = model.config.vocab;
  if (head.rows == 0) return logits;
  logits.values.resize(static_cast<size_t>(head.rows * logits.vocab));
  const TensorView host = TensorView::contiguous(logits.values.data(), DType::f32, {head.rows, logits.vocab});
  const TensorView& values = head.values().view;
  if (values.dtype == DType::f32) {
    PLUMB_TRY(model.backend->download(values, host));
    return logits;
  }
  std::vector<uint16_t> bits(logits.values.size());
  PLUMB_TRY(model.backend->download(
      values, TensorView::contiguous(bits.data(), DType::bf16, {head.rows, logits.vocab})));
  for (size_t i = 0; i < bits.size(); ++i) logits.values[i] = bf16_to_f32(bits[i]);
  return logits;
}

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

// The rows a forward's chunks ask for: how many go through the head, and the draw options of each when the
// chunks ask for draws (at the position the drawn token takes).
struct HeadRequest {
  int64_t logit_rows = 0;
  std::vector<ops::SampleParams> draws;
};

Result<HeadRequest> head_request(std::span<const StreamChunk> chunks) {
  HeadRequest request;
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
    request.logit_rows += rows - first;
    for (int64_t row = first; chunk.draw && row < rows; ++row) {
      request.draws.push_back(*chunk.draw);
      request.draws.back().position = chunk.first_position + row + 1;
    }
  }
  return request;
}

// Not const: the host view of the options takes a mutable pointer.
Status upload_draws(const Model& model, HeadRequest& request, const DrawRows& draws) {
  if (request.draws.empty()) return {};
  const auto rows = static_cast<int64_t>(request.draws.size());
  const auto bytes = static_cast<int64_t>(sizeof(ops::SampleParams));
  return model.backend->upload(TensorView::contiguous(request.draws.data(), DType::u8, {rows, bytes}),
                               draws.params.view);
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

// Every launch of the forward, from the embedding to the draws, into `tensors` (inputs uploaded).
Status launch_forward(const Model& model, std::span<const StreamChunk> chunks,
                      const ForwardTensors& tensors) {
  ops::Backend& backend = *model.backend;
  const Workspace& space = tensors.space;
  const float embed_scale = static_cast<float>(std::sqrt(static_cast<double>(model.config.hidden)));
  PLUMB_TRY(ops::embed_rows(backend, space.ids.view, model.weights.embed, embed_scale, space.h.view));
  PLUMB_TRY(ops::rms_norm(backend, space.h.view, &model.weights.layers.front().input_norm,
                          model.config.rms_norm_eps, space.xn.view));
  LayerRunner runner(model, chunks, space);
  for (size_t index = 0; index < model.config.layers.size(); ++index) PLUMB_TRY(runner.run(index));
  PLUMB_TRY(launch_head(model, chunks, space, tensors.head));
  if (!tensors.draws.ids.storage) return {};
  return ops::sample(backend, tensors.head.values().view, tensors.draws.params.view, tensors.draws.ids.view);
}

// What fixes a graphed forward's launches besides its kept tensors (forward_graphs.hpp).
std::vector<int64_t> signature(const Model& model, std::span<const StreamChunk> chunks, int64_t generation,
                               int64_t rows) {
  const auto address = [](const TensorView& view) {
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(view.data));
  };
  int64_t end = 1;
  for (const StreamChunk& chunk : chunks)
    end = std::max(end, chunk.first_position + static_cast<int64_t>(chunk.tokens.size()));
  std::vector<int64_t> fields{generation, rows, ops::attention_end_bucket(end)};
  for (const StreamChunk& chunk : chunks) {
    fields.insert(fields.end(), {static_cast<int64_t>(chunk.tokens.size()),
                                 static_cast<int64_t>(chunk.logits), chunk.draw.has_value() ? 1 : 0});
    for (size_t layer = 0; layer < model.config.layers.size(); ++layer) {
      const ops::KvView kv = chunk.cache->view(layer, 0);
      fields.insert(fields.end(), {address(kv.keys), address(kv.values), kv.keys.dim(0)});
    }
  }
  return fields;
}

Result<Logits> download_outputs(const Model& model, const ForwardTensors& tensors) {
  return tensors.draws.ids.storage ? download_draws(model, tensors.draws)
                                   : download_logits(model, tensors.head);
}

Result<Logits> run_chunks(const Model& model, std::span<const StreamChunk> chunks, int64_t rows) {
  ops::Backend& backend = *model.backend;
  PLUMB_TRY_ASSIGN(request, head_request(chunks));
  const auto draw_rows = static_cast<int64_t>(request.draws.size());
  if (rows > ForwardGraphs::kGraphRows || !backend.graphs_enabled()) {
    PLUMB_TRY_ASSIGN(tensors, allocate_forward(backend, model.config, rows, request.logit_rows, draw_rows));
    PLUMB_TRY(upload_inputs(model, chunks, tensors.space));
    PLUMB_TRY(upload_draws(model, request, tensors.draws));
    PLUMB_TRY(launch_forward(model, chunks, tensors));
    return download_outputs(model, tensors);
  }
  PLUMB_TRY_ASSIGN(kept, model.graphs->tensors(backend, model.config, rows, request.logit_rows, draw_rows));
  PLUMB_TRY(upload_inputs(model, chunks, kept->tensors.space));
  PLUMB_TRY(upload_draws(model, request, kept->tensors.draws));
  const ForwardGraphs::Plan plan = model.graphs->plan(signature(model, chunks, kept->generation, rows));
  if (!(plan.seen_before && backend.replay_graph(plan.key))) {
    ops::GraphScope graph(backend, plan.seen_before ? plan.key : 0);
    PLUMB_TRY(launch_forward(model, chunks, kept->tensors));
    PLUMB_TRY(graph.finish());
  }
  return download_outputs(model, kept->tensors);
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

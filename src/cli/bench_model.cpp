#include "cli/bench_model.hpp"

#include <algorithm>
#include <chrono>

#include "cli/bench_bounds.hpp"
#include "models/gemma4/try_assign.hpp"

namespace plumb::cli {

namespace {

double weight_bytes(const ops::Weight& weight) {
  if (weight.out == 0) return 0;
  if (weight.format == ops::Weight::Format::dense) return static_cast<double>(weight.dense.bytes());
  return static_cast<double>(weight.packed.bytes() + weight.scales.bytes() + weight.biases.bytes());
}

double params(const ops::Weight& weight) {
  return static_cast<double>(weight.out) * static_cast<double>(weight.in);
}

double kv_bytes(const gemma4::LayerSpec& layer) {
  return 2.0 * static_cast<double>(layer.kv_heads * layer.head_dim) * 2.0;  // keys and values, bf16
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ModelCosts model_costs(const gemma4::Model& model) {
  ModelCosts costs;
  for (const gemma4::LayerWeights& layer : model.weights.layers)
    for (const ops::Weight* weight : {&layer.q_proj, &layer.k_proj, &layer.v_proj, &layer.o_proj,
                                      &layer.gate_proj, &layer.up_proj, &layer.down_proj}) {
      costs.weight_bytes += weight_bytes(*weight);
      costs.layer_params += params(*weight);
    }
  costs.weight_bytes += weight_bytes(model.weights.head);
  costs.head_params = params(model.weights.head);
  for (const gemma4::LayerSpec& layer : model.config.layers) {
    if (layer.kind == gemma4::LayerKind::full) {
      costs.kv_global_bytes += kv_bytes(layer);
    } else {
      costs.kv_sliding_bytes += kv_bytes(layer);
      costs.sliding_window = std::max(costs.sliding_window, layer.window);
    }
  }
  return costs;
}

double kv_read_bytes(const gemma4::Model& model, int64_t position) {
  double bytes = 0;
  for (const gemma4::LayerSpec& layer : model.config.layers) {
    const int64_t keys =
        layer.kind == gemma4::LayerKind::full ? position + 1 : std::min(position + 1, layer.window);
    bytes += kv_bytes(layer) * static_cast<double>(keys);
  }
  return bytes;
}

double prompt_flops(const gemma4::Model& model, int64_t length) {
  const ModelCosts costs = model_costs(model);
  const auto rows = static_cast<double>(length);
  double flops = 2.0 * rows * costs.layer_params + 2.0 * costs.head_params;
  for (const gemma4::LayerSpec& layer : model.config.layers) {
    double keys = 0;  // keys seen, summed over rows: i + 1 for row i, at most the window on sliding layers
    const int64_t reach = layer.kind == gemma4::LayerKind::full ? length : std::min(length, layer.window);
    keys += static_cast<double>(reach) * static_cast<double>(reach + 1) / 2.0;
    keys += static_cast<double>(length - reach) * static_cast<double>(reach);
    // q·k and p·v: 2 FLOPs per multiply-add, head_dim each, per head.
    flops += 4.0 * static_cast<double>(layer.heads * layer.head_dim) * keys;
  }
  return flops;
}

std::vector<int32_t> bench_prompt(int64_t stream, int64_t length, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i)
    ids[static_cast<size_t>(i)] =
        i == 0 ? 2 : static_cast<int32_t>(3 + (i * 7919 + stream * 104729) % (vocab - 3));
  return ids;
}

Result<DecodeRun> run_decode(const gemma4::Model& model, int64_t streams, int64_t prompt, int64_t steps,
                             bool profile) {
  DecodeRun run;
  run.streams = streams;
  run.prompt = prompt;
  std::vector<gemma4::StreamCache> caches;
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t s = 0; s < streams; ++s) {
    PLUMB_TRY_ASSIGN(cache, gemma4::new_stream(model, prompt));
    caches.push_back(std::move(cache));
    prompts.push_back(bench_prompt(s, prompt, model.config.vocab));
  }
  std::vector<gemma4::StreamChunk> chunks(static_cast<size_t>(streams));
  const ops::SampleParams greedy_draw;  // temperature 0: drawn on the device, as the engine does
  for (int64_t s = 0; s < streams; ++s)
    chunks[s] = {&caches[s], prompts[s], 0, gemma4::LogitRows::last, greedy_draw};
  PLUMB_TRY_ASSIGN(first, gemma4::forward(model, chunks));
  run.tokens.resize(static_cast<size_t>(streams));
  for (int64_t s = 0; s < streams; ++s) run.tokens[s].push_back(first.draws[static_cast<size_t>(s)]);
  constexpr size_t kProfileLines = 30;
  if (profile) (void)take_op_profile(*model.backend, 1, 0);  // drops the prompt's times
  const int64_t replays_before = model.backend->graph_replays();
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t s = 0; s < streams; ++s)
      chunks[s] = {&caches[s], std::span(&run.tokens[s].back(), 1), prompt + step, gemma4::LogitRows::last,
                   greedy_draw};
    PLUMB_TRY(model.backend->synchronize());
    const auto start = std::chrono::steady_clock::now();
    PLUMB_TRY_ASSIGN(logits, gemma4::forward(model, chunks));
    run.step_seconds.push_back(seconds_since(start));
    for (int64_t s = 0; s < streams; ++s) run.tokens[s].push_back(logits.draws[static_cast<size_t>(s)]);
  }
  run.graph_replays = model.backend->graph_replays() - replays_before;
  if (profile) run.profile = take_op_profile(*model.backend, steps, kProfileLines);
  return run;
}

Result<PromptRun> run_prompt(const gemma4::Model& model, int64_t length, int repeats, bool profile) {
  PromptRun run;
  run.length = length;
  const std::vector<int32_t> ids = bench_prompt(0, length, model.config.vocab);
  for (int r = 0; r <= repeats; ++r) {
    PLUMB_TRY_ASSIGN(cache, gemma4::new_stream(model, length));
    const gemma4::StreamChunk chunk{&cache, ids, 0, gemma4::LogitRows::last, ops::SampleParams{}};
    PLUMB_TRY(model.backend->synchronize());
    const auto start = std::chrono::steady_clock::now();
    PLUMB_TRY_ASSIGN(logits, gemma4::forward(model, std::span(&chunk, 1)));
    const double seconds = seconds_since(start);
    run.first_tokens.push_back(logits.draws[0]);
    if (r > 0) run.seconds.push_back(seconds);  // the first call warms up (allocations, first touches)
    if (profile) {
      std::string times = take_op_profile(*model.backend, 1, 20);
      if (r == repeats) run.profile = std::move(times);
    }
  }
  return run;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace plumb::cli

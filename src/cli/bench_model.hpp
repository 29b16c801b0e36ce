#pragma once
// What `plumb bench` runs on a loaded Gemma 4: decode steps of several streams in one forward, whole prompts
// from position 0, and the bytes and FLOPs each must move or compute (the bounds of DESIGN.md §8). Prompts
// are deterministic token ids (tools/reference/hf_bench.py makes the same ones), and every run's tokens are
// kept so that speeds are quoted only for checked tokens.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/gemma4/model.hpp"

namespace plumb::cli {

struct ModelCosts {
  double weight_bytes = 0;      // every matmul weight once, the head included: what one decode step reads
  double layer_params = 0;      // parameters of the layers' matmuls
  double head_params = 0;       // the head's (vocab x hidden)
  double kv_global_bytes = 0;   // KV bytes per position over the global layers (kept for the whole context)
  double kv_sliding_bytes = 0;  // KV bytes per position over the sliding layers (kept for the window only)
  int64_t sliding_window = 0;
};

ModelCosts model_costs(const gemma4::Model& model);

// KV bytes one decode row at absolute position `position` reads: its keys and values in every layer.
double kv_read_bytes(const gemma4::Model& model, int64_t position);

// FLOPs of a prompt of `length` tokens from position 0: every row's matmuls, attention over each row's causal
// (and sliding) keys, and the head for the last row.
double prompt_flops(const gemma4::Model& model, int64_t length);

// Prompt `stream` of `length` ids: <bos> (2), then 3 + (i * 7919 + stream * 104729) mod (vocab - 3).
std::vector<int32_t> bench_prompt(int64_t stream, int64_t length, int64_t vocab);

struct DecodeRun {
  int64_t streams = 0;
  int64_t prompt = 0;
  std::vector<double> step_seconds;          // each decode step (one row of every stream)
  int64_t graph_replays = 0;                 // steps that replayed a recorded graph (backends with graphs)
  std::vector<std::vector<int32_t>> tokens;  // per stream: the greedy token after the prompt, then one a step
  std::string profile;                       // per-op device times of the steps, where asked for and kept
};

// `streams` streams with prompts 0.. of `prompt` tokens run as one batch, then `steps` greedy decode steps
// of one row per stream, each timed.
// With `profile`, the backend's per-op times of the decode steps (not the prompt) go to DecodeRun::profile.
Result<DecodeRun> run_decode(const gemma4::Model& model, int64_t streams, int64_t prompt, int64_t steps,
                             bool profile = false);

struct PromptRun {
  int64_t length = 0;
  std::vector<double> seconds;  // each timed repeat: the prompt's forward up to its first token's logits
  std::vector<int32_t> first_tokens;
  std::string profile;  // per-op device times of one timed repeat, where asked for and kept
};

// Prompt 0 of `length` tokens in one forward on a fresh stream, once to warm up and `repeats` times timed.
Result<PromptRun> run_prompt(const gemma4::Model& model, int64_t length, int repeats, bool profile = false);

double median(std::vector<double> values);

}  // namespace plumb::cli

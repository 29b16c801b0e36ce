#pragma once
// Deterministic tiny Gemma 4 checkpoints for tests and the demo (`plumb make-tiny gemma4 DIR`): config.json,
// generation_config.json, model.safetensors, a small tokenizer.json in Gemma's format (BPE with byte
// fallback, Gemma's special tokens at Gemma's ids), tokenizer_config.json and Gemma 4's chat_template.jinja.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace plumb::gemma4 {

struct TinyOptions {
  std::optional<int> bits;  // MLX affine (MLX names and a quantization block) when set
  int group = 64;
  uint64_t seed = 4;
  // Geometry of the tiny model: every dim a multiple of 128 so each affine group size divides it.
  int64_t hidden = 128;
  int64_t intermediate = 256;
  int64_t layers = 6;  // five sliding, then one full (keys as values, proportional RoPE)
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 32;
  int64_t global_head_dim = 64;
  int64_t global_kv_heads = 1;
  int64_t sliding_window = 8;
  int64_t vocab = 0;  // 0: the tiny tokenizer's size
  int64_t max_positions = 4096;
  bool unified = true;                         // gemma4_unified (the 12B's type), else gemma4 (the 31B's)
  int64_t max_shard_bytes = int64_t{4} << 30;  // larger checkpoints are sharded with an index
  int threads = 0;                             // 0: up to 32 hardware threads; the bytes do not depend on it
};

// Random weights at a real geometry (issue 6, for speed at full size): "12b" (gemma4_unified: hidden 3840, 48
// layers, 16 heads, 8 KV heads of 256 on sliding layers, one of 512 on global ones, GeGLU 15360, vocab
// 262144) or "31b" (gemma4: hidden 5376, 60 layers, 32 heads, 16 KV heads of 256, 4 of 512 on global layers,
// GeGLU 21504).
Result<TinyOptions> geometry_options(std::string_view name);

// The model's vocabulary: options.vocab, or the tiny tokenizer's size.
int64_t tiny_model_vocab(const TinyOptions& options);
// Layer i is full attention: every sixth layer, and the last.
bool tiny_layer_is_full(const TinyOptions& options, int64_t layer);
// Writes model.safetensors (or shards and model.safetensors.index.json).
Status write_tiny_weights(const std::string& dir, const TinyOptions& options);

// The tiny tokenizer's vocabulary size (ids 0 .. size - 1).
int64_t tiny_vocab_size();

// tokenizer.json: a BPE model with byte fallback over a small vocabulary, Gemma's normalizer, pre-tokenizer
// and decoder, and Gemma's special tokens (<pad> 0, <eos> 1, <bos> 2, <unk> 3, <mask> 4, <|turn> 105, <turn|>
// 106...).
nlohmann::json tiny_tokenizer_json();

// config.json for the options (model_type gemma4_unified with a nested text_config).
nlohmann::json tiny_config_json(const TinyOptions& options);

// Writes every file into `dir` (created if missing); the same options give the same bytes.
Status write_tiny_checkpoint(const std::string& dir, const TinyOptions& options);

// Gemma 4's chat template, as shipped in checkpoints' chat_template.jinja.
std::string_view gemma4_chat_template();

}  // namespace plumb::gemma4

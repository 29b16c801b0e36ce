// Deterministic tiny Gemma 4 checkpoints: config.json, generation_config.json, tokenizer files and the chat
// template (the weights are written by tiny_weights.cpp).
#include "models/gemma4/tiny.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "ops/affine.hpp"

namespace plumb::gemma4 {

namespace {

using nlohmann::json;

Status write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!file)
    return error_at("make-tiny", "file", path.string(), "could not be written", "a writable path",
                    "a write failure");
  return {};
}

json generation_config() {
  return json{{"bos_token_id", 2}, {"eos_token_id", {1, 106, 50}}, {"pad_token_id", 0},
              {"do_sample", true}, {"temperature", 1.0},           {"top_k", 64},
              {"top_p", 0.95}};
}

json tokenizer_config() {
  return json{{"tokenizer_class", "GemmaTokenizer"},
              {"bos_token", "<bos>"},
              {"eos_token", "<turn|>"},
              {"pad_token", "<pad>"},
              {"unk_token", "<unk>"},
              {"add_bos_token", false},
              {"add_eos_token", false},
              {"model_max_length", 1024}};
}

}  // namespace

int64_t tiny_model_vocab(const TinyOptions& options) {
  return options.vocab > 0 ? options.vocab : tiny_vocab_size();
}

bool tiny_layer_is_full(const TinyOptions& options, int64_t layer) {
  return layer == options.layers - 1 || (layer + 1) % 6 == 0;
}

Result<TinyOptions> geometry_options(std::string_view name) {
  TinyOptions options;
  options.vocab = 262144;
  options.max_positions = 262144;
  options.sliding_window = 1024;
  options.head_dim = 256;
  options.global_head_dim = 512;
  if (name == "12b") {
    options.hidden = 3840, options.intermediate = 15360, options.layers = 48;
    options.heads = 16, options.kv_heads = 8, options.global_kv_heads = 1;
    return options;
  }
  if (name == "31b") {
    options.unified = false;
    options.hidden = 5376, options.intermediate = 21504, options.layers = 60;
    options.heads = 32, options.kv_heads = 16, options.global_kv_heads = 4;
    return options;
  }
  return error_at("make-tiny", "geometry", name, "is not known", "12b or 31b", name);
}

json tiny_config_json(const TinyOptions& options) {
  json layer_types = json::array();
  for (int64_t i = 0; i < options.layers; ++i)
    layer_types.push_back(tiny_layer_is_full(options, i) ? "full_attention" : "sliding_attention");
  json text = {
      {"model_type", options.unified ? "gemma4_unified_text" : "gemma4_text"},
      {"hidden_size", options.hidden},
      {"intermediate_size", options.intermediate},
      {"num_hidden_layers", options.layers},
      {"num_attention_heads", options.heads},
      {"num_key_value_heads", options.kv_heads},
      {"head_dim", options.head_dim},
      {"global_head_dim", options.global_head_dim},
      {"num_global_key_value_heads", options.global_kv_heads},
      {"attention_k_eq_v", true},
      {"sliding_window", options.sliding_window},
      {"layer_types", layer_types},
      {"vocab_size", tiny_model_vocab(options)},
      {"rms_norm_eps", 1e-6},
      {"final_logit_softcapping", 30.0},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"max_position_embeddings", options.max_positions},
      {"tie_word_embeddings", true},
      {"use_bidirectional_attention", "vision"},
      {"bos_token_id", 2},
      {"eos_token_id", 1},
      {"pad_token_id", 0},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
        {"full_attention",
         {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}}}},
  };
  json config = {
      {"architectures",
       {options.unified ? "Gemma4UnifiedForConditionalGeneration" : "Gemma4ForConditionalGeneration"}},
      {"model_type", options.unified ? "gemma4_unified" : "gemma4"},
      {"text_config", text},
      {"tie_word_embeddings", true},
      {"dtype", "bfloat16"},
      {"bos_token_id", 2},
      {"eos_token_id", {1, 106}},
      {"pad_token_id", 0}};
  if (!options.unified) {
    // Gemma4TextConfig's defaults turn on per-layer embeddings; the 31B has none of the E2B/E4B extras.
    config["text_config"]["hidden_size_per_layer_input"] = 0;
    config["text_config"]["num_kv_shared_layers"] = 0;
    config["text_config"]["enable_moe_block"] = false;
    config["text_config"]["use_double_wide_mlp"] = false;
  }
  if (options.bits) {
    const json block = {{"group_size", options.group}, {"bits", *options.bits}, {"mode", "affine"}};
    config["quantization"] = block;
    config["quantization_config"] = block;
  }
  return config;
}

Status write_tiny_checkpoint(const std::string& dir, const TinyOptions& options) {
  if (options.bits &&
      (!ops::affine_bits_supported(*options.bits) || !ops::affine_group_supported(options.group)))
    return error_at("make-tiny", "option", "--bits/--group", "is not an MLX affine format",
                    "bits 2, 3, 4, 5, 6 or 8 and group 32, 64 or 128",
                    fmt::format("{} bits, group {}", *options.bits, options.group));
  std::error_code failure;
  std::filesystem::create_directories(dir, failure);
  if (failure)
    return error_at("make-tiny", "directory", dir, "could not be created", "a writable path",
                    failure.message());
  PLUMB_TRY(write_tiny_weights(dir, options));
  const std::filesystem::path root(dir);
  PLUMB_TRY(write_text(root / "config.json", tiny_config_json(options).dump(2) + "\n"));
  PLUMB_TRY(write_text(root / "generation_config.json", generation_config().dump(2) + "\n"));
  PLUMB_TRY(write_text(root / "tokenizer.json", tiny_tokenizer_json().dump(2) + "\n"));
  PLUMB_TRY(write_text(root / "tokenizer_config.json", tokenizer_config().dump(2) + "\n"));
  return write_text(root / "chat_template.jinja", gemma4_chat_template());
}

}  // namespace plumb::gemma4

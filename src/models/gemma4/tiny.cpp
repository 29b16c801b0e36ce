// Deterministic tiny Gemma 4 checkpoints: every value comes from a counter-based generator keyed by (seed,
// tensor name, index), so the files do not depend on the order they are written in or on the platform.
#include "models/gemma4/tiny.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/half.hpp"
#include "core/safetensors.hpp"
#include "ops/affine.hpp"

namespace plumb::gemma4 {

namespace {

using nlohmann::json;

uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull ^ mix(seed);
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return mix(hash);
}

// Uniform in [-1, 1), exact in double.
double uniform(uint64_t key, int64_t index) {
  return static_cast<double>(mix(key ^ mix(static_cast<uint64_t>(index))) >> 11) * 0x1.0p-52 - 1.0;
}

// How a tensor's values are drawn: center + spread * uniform.
struct Draw {
  double center;
  double spread;
};

struct TinyTensor {
  std::string name;
  Shape shape;
  Draw draw;
  bool linear;  // quantized when the checkpoint is
};

std::vector<float> draw_values(const TinyTensor& tensor, uint64_t seed) {
  const uint64_t key = name_key(seed, tensor.name);
  std::vector<float> values(static_cast<size_t>(shape_elements(tensor.shape)));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = round_bf16(
        static_cast<float>(tensor.draw.center + tensor.draw.spread * uniform(key, static_cast<int64_t>(i))));
  return values;
}

std::vector<TinyTensor> tiny_tensors(const TinyOptions& options, const std::string& prefix) {
  const int64_t hidden = options.hidden, width = options.intermediate;
  const Draw norm{1.0, 0.25};
  auto linear = [](int64_t in) { return Draw{0.0, std::sqrt(3.0 / static_cast<double>(in))}; };
  std::vector<TinyTensor> tensors;
  tensors.push_back({prefix + "embed_tokens", {tiny_vocab_size(), hidden}, {0.0, 0.3}, true});
  for (int64_t i = 0; i < options.layers; ++i) {
    const bool full = i == options.layers - 1 || (i + 1) % 6 == 0;
    const int64_t head_dim = full ? options.global_head_dim : options.head_dim;
    const int64_t kv_heads = full ? options.global_kv_heads : options.kv_heads;
    const int64_t q_width = options.heads * head_dim, kv_width = kv_heads * head_dim;
    const std::string layer = fmt::format("{}layers.{}.", prefix, i);
    for (const char* name : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                             "post_feedforward_layernorm"})
      tensors.push_back({layer + name, {hidden}, norm, false});
    tensors.push_back({layer + "self_attn.q_norm", {head_dim}, norm, false});
    tensors.push_back({layer + "self_attn.k_norm", {head_dim}, norm, false});
    tensors.push_back({layer + "self_attn.q_proj", {q_width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "self_attn.k_proj", {kv_width, hidden}, linear(hidden), true});
    if (!full) tensors.push_back({layer + "self_attn.v_proj", {kv_width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "self_attn.o_proj", {hidden, q_width}, linear(q_width), true});
    tensors.push_back({layer + "mlp.gate_proj", {width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "mlp.up_proj", {width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "mlp.down_proj", {hidden, width}, linear(width), true});
    tensors.push_back({layer + "layer_scalar", {1}, {0.75, 0.25}, false});
  }
  tensors.push_back({prefix + "norm", {hidden}, norm, false});
  return tensors;
}

// Owns the bytes of every tensor until they are written.
struct TensorStore {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<TensorBytes> entries;

  template <class T>
  void add(std::string name, DType dtype, Shape shape, const std::vector<T>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(T));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    buffers.push_back(std::move(bytes));
    entries.push_back({std::move(name), dtype, std::move(shape), buffers.back()});
  }
};

void add_tensor(TensorStore& store, const TinyTensor& tensor, const TinyOptions& options) {
  const std::vector<float> values = draw_values(tensor, options.seed);
  const bool is_module = tensor.linear || tensor.name.ends_with("norm") || tensor.name.ends_with("layernorm");
  const std::string weight_name = is_module ? tensor.name + ".weight" : tensor.name;
  if (tensor.linear && options.bits) {
    const int64_t out = tensor.shape[0], in = tensor.shape[1];
    const ops::AffineTensor packed = ops::affine_quantize(values, out, in, *options.bits, options.group);
    store.add(weight_name, DType::u32, {out, ops::affine_row_words(in, *options.bits)}, packed.packed);
    store.add(tensor.name + ".scales", DType::bf16, {out, in / options.group}, packed.scales);
    store.add(tensor.name + ".biases", DType::bf16, {out, in / options.group}, packed.biases);
    return;
  }
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
  store.add(weight_name, DType::bf16, tensor.shape, bits);
}

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

json tiny_config_json(const TinyOptions& options) {
  json layer_types = json::array();
  for (int64_t i = 0; i < options.layers; ++i)
    layer_types.push_back(i == options.layers - 1 || (i + 1) % 6 == 0 ? "full_attention"
                                                                      : "sliding_attention");
  json text = {
      {"model_type", "gemma4_unified_text"},
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
      {"vocab_size", tiny_vocab_size()},
      {"rms_norm_eps", 1e-6},
      {"final_logit_softcapping", 30.0},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"max_position_embeddings", 4096},
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
  json config = {{"architectures", {"Gemma4UnifiedForConditionalGeneration"}},
                 {"model_type", "gemma4_unified"},
                 {"text_config", text},
                 {"tie_word_embeddings", true},
                 {"dtype", "bfloat16"},
                 {"bos_token_id", 2},
                 {"eos_token_id", {1, 106}},
                 {"pad_token_id", 0}};
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
  const std::string prefix = options.bits ? "language_model.model." : "model.language_model.";
  TensorStore store;
  for (const TinyTensor& tensor : tiny_tensors(options, prefix)) add_tensor(store, tensor, options);
  const std::filesystem::path root(dir);
  const std::map<std::string, std::string> metadata = {{"format", options.bits ? "mlx" : "pt"}};
  PLUMB_TRY(write_safetensors(root / "model.safetensors", store.entries, metadata));
  PLUMB_TRY(write_text(root / "config.json", tiny_config_json(options).dump(2) + "\n"));
  PLUMB_TRY(write_text(root / "generation_config.json", generation_config().dump(2) + "\n"));
  PLUMB_TRY(write_text(root / "tokenizer.json", tiny_tokenizer_json().dump(2) + "\n"));
  PLUMB_TRY(write_text(root / "tokenizer_config.json", tokenizer_config().dump(2) + "\n"));
  return write_text(root / "chat_template.jinja", gemma4_chat_template());
}

}  // namespace plumb::gemma4

#include "models/gemma4/config.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "models/gemma4/config_fields.hpp"
#include "models/gemma4/quantization.hpp"

namespace plumb::gemma4 {

namespace {

using nlohmann::json;

// Defaults of transformers' Gemma4TextConfig and Gemma4UnifiedTextConfig where they differ.
struct TextDefaults {
  int64_t sliding_window;
  int64_t max_position_embeddings;
  int64_t hidden_size_per_layer_input;
};
constexpr TextDefaults kTextDefaults{512, 131072, 256};
constexpr TextDefaults kUnifiedTextDefaults{1024, 262144, 0};

constexpr const char* kSliding = "sliding_attention";
constexpr const char* kFull = "full_attention";

Error refuse(std::string_view where, std::string_view key, std::string_view what, std::string_view expected,
             std::string_view got) {
  return error_at(where, "field", key, fmt::format("asks for {}, which is not built", what), expected, got);
}

// Refuses, by name, the parts of Gemma 4 the forward does not build.
Status refuse_unbuilt(const FieldReader& text, const TextDefaults& defaults) {
  PLUMB_TRY_ASSIGN(per_layer_input,
                   text.integer("hidden_size_per_layer_input", defaults.hidden_size_per_layer_input));
  if (per_layer_input != 0)
    return refuse(text.where(), text.name("hidden_size_per_layer_input"), "per-layer embeddings (PLE)", "0",
                  std::to_string(per_layer_input));
  PLUMB_TRY_ASSIGN(shared, text.integer("num_kv_shared_layers", 0));
  if (shared != 0)
    return refuse(text.where(), text.name("num_kv_shared_layers"), "KV-shared layers", "0",
                  std::to_string(shared));
  PLUMB_TRY_ASSIGN(moe, text.boolean("enable_moe_block", false));
  if (moe)
    return refuse(text.where(), text.name("enable_moe_block"), "a mixture-of-experts block", "false", "true");
  PLUMB_TRY_ASSIGN(bias, text.boolean("attention_bias", false));
  if (bias)
    return refuse(text.where(), text.name("attention_bias"), "attention projection biases", "false", "true");
  PLUMB_TRY_ASSIGN(activation, text.string("hidden_activation", "gelu_pytorch_tanh"));
  if (activation != "gelu_pytorch_tanh")
    return refuse(text.where(), text.name("hidden_activation"), "another activation", "gelu_pytorch_tanh",
                  activation);
  PLUMB_TRY_ASSIGN(bidirectional, text.optional_string("use_bidirectional_attention"));
  if (bidirectional && *bidirectional == "all")
    return refuse(text.where(), text.name("use_bidirectional_attention"),
                  "bidirectional attention over all tokens", "null or \"vision\"", "\"all\"");
  return {};
}

Result<std::vector<std::string>> layer_types(const FieldReader& text, int64_t layer_count) {
  std::vector<std::string> types;
  if (!text.has("layer_types")) {
    // transformers' default: every sixth layer is full attention.
    for (int64_t i = 0; i < layer_count; ++i) types.push_back((i + 1) % 6 ? kSliding : kFull);
  } else {
    PLUMB_TRY_ASSIGN(listed, text.string_list("layer_types"));
    types = std::move(listed);
  }
  if (static_cast<int64_t>(types.size()) != layer_count)
    return error_at(text.where(), "field", text.name("layer_types"), "has the wrong length",
                    fmt::format("num_hidden_layers = {}", layer_count), std::to_string(types.size()));
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] != kSliding && types[i] != kFull)
      return error_at(text.where(), "field", text.name(fmt::format("layer_types[{}]", i)),
                      "names an unknown layer type", "sliding_attention or full_attention", types[i]);
  // transformers forces the last layer to full attention; the weights were trained that way.
  if (!types.empty()) types.back() = kFull;
  return types;
}

// RoPE for one layer type from rope_parameters, with transformers' per-type defaults.
Result<ops::RopeSpec> rope_for(const FieldReader& text, const std::string& type, int64_t head_dim) {
  const bool full = type == kFull;
  ops::RopeSpec spec{full ? 1e6 : 1e4, head_dim, full ? 0.25 : 1.0};
  if (!text.has("rope_parameters")) return spec;
  PLUMB_TRY_ASSIGN(all, text.object("rope_parameters"));
  if (!all.has(type)) return spec;
  PLUMB_TRY_ASSIGN(params, all.object(type));
  PLUMB_TRY_ASSIGN(rope_type, params.string("rope_type", "default"));
  PLUMB_TRY_ASSIGN(theta, params.number("rope_theta", spec.theta));
  PLUMB_TRY_ASSIGN(factor, params.number("factor", 1.0));
  if (!(factor > 0.0))
    return error_at(params.where(), "field", params.name("factor"), "is out of range", "> 0",
                    fmt::format("{}", factor));
  spec.theta = theta;
  if (rope_type == "default") {
    spec.partial_rotary_factor = 1.0;  // transformers' default RoPE rotates the whole head, unscaled
  } else if (rope_type == "proportional") {
    spec.factor = factor;
    PLUMB_TRY_ASSIGN(partial, params.number("partial_rotary_factor", 1.0));
    if (!(partial > 0.0 && partial <= 1.0))
      return error_at(params.where(), "field", params.name("partial_rotary_factor"), "is out of range",
                      "0 < factor <= 1", fmt::format("{}", partial));
    spec.partial_rotary_factor = partial;
  } else {
    return refuse(params.where(), params.name("rope_type"), "another RoPE type", "default or proportional",
                  rope_type);
  }
  return spec;
}

struct HeadGeometry {
  int64_t heads, kv_heads, head_dim;
};

// Head geometry per layer: per_layer_config overrides when present, else global_head_dim and (with
// attention_k_eq_v) num_global_key_value_heads on full layers, as transformers derives them.
Result<std::vector<HeadGeometry>> head_geometry(const FieldReader& text,
                                                const std::vector<std::string>& types,
                                                const HeadGeometry& base, bool k_eq_v) {
  std::vector<HeadGeometry> layers(types.size(), base);
  if (text.has("per_layer_config")) {
    PLUMB_TRY_ASSIGN(overrides, text.object("per_layer_config"));
    for (const std::string& key : overrides.keys()) {
      PLUMB_TRY_ASSIGN(index, parse_layer_index(overrides.where(), key, static_cast<int64_t>(types.size())));
      PLUMB_TRY_ASSIGN(entry, overrides.object(key));
      PLUMB_TRY(entry.only_keys({"head_dim", "num_key_value_heads", "num_attention_heads"}));
      HeadGeometry& layer = layers[static_cast<size_t>(index)];
      PLUMB_TRY_ASSIGN(head_dim, entry.integer("head_dim", layer.head_dim));
      PLUMB_TRY_ASSIGN(kv_heads, entry.integer("num_key_value_heads", layer.kv_heads));
      PLUMB_TRY_ASSIGN(heads, entry.integer("num_attention_heads", layer.heads));
      layer = {heads, kv_heads, head_dim};
    }
    return layers;
  }
  PLUMB_TRY_ASSIGN(global_head_dim, text.integer("global_head_dim", 512));
  PLUMB_TRY_ASSIGN(global_kv_heads, text.optional_integer("num_global_key_value_heads"));
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != kFull) continue;
    if (global_head_dim > 0) layers[i].head_dim = global_head_dim;
    if (k_eq_v && global_kv_heads) layers[i].kv_heads = *global_kv_heads;
  }
  return layers;
}

Status check_layer(std::string_view where, size_t index, const LayerSpec& layer) {
  const std::string name = fmt::format("layer {}", index);
  if (layer.heads <= 0 || layer.kv_heads <= 0 || layer.head_dim <= 0 || layer.head_dim % 2 != 0)
    return error_at(
        where, "attention of", name, "has an impossible geometry",
        "positive heads and kv heads and an even head_dim",
        fmt::format("heads {}, kv heads {}, head_dim {}", layer.heads, layer.kv_heads, layer.head_dim));
  if (layer.heads % layer.kv_heads != 0)
    return error_at(where, "attention of", name, "has query heads that do not group over its kv heads",
                    fmt::format("a multiple of {}", layer.kv_heads), std::to_string(layer.heads));
  return {};
}

Result<std::vector<LayerSpec>> parse_layers(const FieldReader& text, int64_t window) {
  PLUMB_TRY_ASSIGN(layer_count, text.positive("num_hidden_layers", 30));
  PLUMB_TRY_ASSIGN(types, layer_types(text, layer_count));
  PLUMB_TRY_ASSIGN(heads, text.positive("num_attention_heads", 8));
  PLUMB_TRY_ASSIGN(kv_heads, text.positive("num_key_value_heads", 4));
  PLUMB_TRY_ASSIGN(head_dim, text.positive("head_dim", 256));
  PLUMB_TRY_ASSIGN(k_eq_v, text.boolean("attention_k_eq_v", false));
  PLUMB_TRY_ASSIGN(geometry, head_geometry(text, types, {heads, kv_heads, head_dim}, k_eq_v));
  std::vector<LayerSpec> layers;
  for (size_t i = 0; i < types.size(); ++i) {
    LayerSpec layer;
    layer.kind = types[i] == kFull ? LayerKind::full : LayerKind::sliding;
    layer.heads = geometry[i].heads;
    layer.kv_heads = geometry[i].kv_heads;
    layer.head_dim = geometry[i].head_dim;
    layer.k_eq_v = k_eq_v && layer.kind == LayerKind::full;
    layer.window = layer.kind == LayerKind::sliding ? window : 0;
    PLUMB_TRY_ASSIGN(rope, rope_for(text, types[i], layer.head_dim));
    layer.rope = rope;
    PLUMB_TRY(check_layer(text.where(), i, layer));
    layers.push_back(layer);
  }
  return layers;
}

Status parse_scalars(const FieldReader& text, const TextDefaults& defaults, Config& config) {
  PLUMB_TRY_ASSIGN(hidden, text.positive("hidden_size", 2304));
  PLUMB_TRY_ASSIGN(intermediate, text.positive("intermediate_size", 9216));
  PLUMB_TRY_ASSIGN(vocab, text.positive("vocab_size", 262144));
  PLUMB_TRY_ASSIGN(eps, text.number("rms_norm_eps", 1e-6));
  PLUMB_TRY_ASSIGN(softcap, text.optional_number("final_logit_softcapping"));
  PLUMB_TRY_ASSIGN(tied, text.boolean("tie_word_embeddings", true));
  PLUMB_TRY_ASSIGN(window, text.positive("sliding_window", defaults.sliding_window));
  PLUMB_TRY_ASSIGN(max_positions, text.positive("max_position_embeddings", defaults.max_position_embeddings));
  PLUMB_TRY_ASSIGN(bos, text.integer("bos_token_id", 2));
  PLUMB_TRY_ASSIGN(pad, text.integer("pad_token_id", 0));
  PLUMB_TRY_ASSIGN(eos, text.integer_list_or_one("eos_token_id", {1}));
  if (softcap && !(*softcap > 0.0))
    return error_at(text.where(), "field", text.name("final_logit_softcapping"), "is out of range",
                    "null or > 0", fmt::format("{}", *softcap));
  if (vocab > INT32_MAX)
    return error_at(text.where(), "field", text.name("vocab_size"), "is too large", "<= 2^31 - 1",
                    std::to_string(vocab));
  config.hidden = hidden;
  config.intermediate = intermediate;
  config.vocab = vocab;
  config.rms_norm_eps = static_cast<float>(eps);
  if (softcap) config.final_logit_softcapping = static_cast<float>(*softcap);
  config.tie_word_embeddings = tied;
  config.sliding_window = window;
  config.max_position_embeddings = max_positions;
  config.bos_token_id = static_cast<int32_t>(bos);
  config.pad_token_id = static_cast<int32_t>(pad);
  for (int64_t id : eos) config.eos_token_ids.push_back(static_cast<int32_t>(id));
  return {};
}

// The text part and its flavour: nested under text_config for the multimodal model types.
Result<FieldReader> text_part(const FieldReader& root, const std::string& model_type, Config& config) {
  if (model_type == "gemma4_text" || model_type == "gemma4_unified_text") {
    config.text_model_type = model_type;
    return root;
  }
  if (model_type != "gemma4" && model_type != "gemma4_unified")
    return error_at(root.where(), "field", "model_type", "is not a Gemma 4 model type",
                    "gemma4, gemma4_text, gemma4_unified or gemma4_unified_text", model_type);
  if (model_type == "gemma4" && root.has("audio_config") && !root.is_null("audio_config"))
    return refuse(root.where(), "audio_config", "the audio encoder", "null", "an audio encoder config");
  if (!root.has("text_config"))
    return error_at(root.where(), "field", "text_config", "is missing", "the text model's config", "nothing");
  PLUMB_TRY_ASSIGN(text, root.object("text_config"));
  config.text_model_type = model_type + "_text";
  return text;
}

}  // namespace

Result<Config> parse_config(const nlohmann::json& root_json, std::string_view where) {
  if (!root_json.is_object())
    return error_at(where, "document", "config.json", "is not a JSON object", "an object",
                    root_json.type_name());
  const FieldReader root(root_json, std::string(where));
  Config config;
  PLUMB_TRY_ASSIGN(model_type, root.string("model_type", ""));
  config.model_type = model_type;
  PLUMB_TRY_ASSIGN(text, text_part(root, model_type, config));
  const TextDefaults& defaults =
      config.text_model_type == "gemma4_text" ? kTextDefaults : kUnifiedTextDefaults;
  PLUMB_TRY(refuse_unbuilt(text, defaults));
  PLUMB_TRY(parse_scalars(text, defaults, config));
  PLUMB_TRY_ASSIGN(layers, parse_layers(text, config.sliding_window));
  config.layers = std::move(layers);
  PLUMB_TRY_ASSIGN(quantization, parse_quantization(root));
  config.quantization = std::move(quantization);
  return config;
}

Result<nlohmann::json> read_json_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return error_at(path, "file", path, "cannot be opened", "a readable file", "an open failure");
  std::stringstream text;
  text << file.rdbuf();
  nlohmann::json document = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded())
    return error_at(path, "file", path, "is not valid JSON", "a JSON document", "a parse error");
  return document;
}

Result<Config> load_config(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  PLUMB_TRY_ASSIGN(document, read_json_file(path));
  return parse_config(document, path);
}

}  // namespace plumb::gemma4

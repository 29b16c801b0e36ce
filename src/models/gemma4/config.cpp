#include "models/gemma4/config.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/json_text.hpp"
#include "core/printable.hpp"
#include "models/gemma4/quantization.hpp"
#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

namespace {

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

// An integer field that must be positive; transformers' default when absent or null.
Result<int64_t> positive(const Fields& fields, std::string_view key, int64_t fallback) {
  PLUMB_TRY_ASSIGN(value, fields.integer_or(key, fallback));
  if (value <= 0)
    return error_at(fields.where(), "field", fields.field_name(key), "is out of range", "> 0",
                    std::to_string(value));
  return value;
}

// Refuses any key of `fields` outside `allowed`, by name.
Status only_keys(const Fields& fields, std::initializer_list<std::string_view> allowed) {
  for (const auto& item : fields.json().items())
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
      return error_at(fields.where(), "field", fields.field_name(item.key()), "is not supported here",
                      fmt::format("only {}", fmt::join(allowed, ", ")),
                      fmt::format("{} {}", json_kind(item.value()), json_excerpt(item.value(), 40)));
  return {};
}

// A per_layer_config key: a decimal layer index below `layer_count`.
Result<int64_t> layer_index(const Fields& overrides, const std::string& key, int64_t layer_count) {
  int64_t index = -1;
  const auto [end, problem] = std::from_chars(key.data(), key.data() + key.size(), index);
  if (problem != std::errc() || end != key.data() + key.size() || index < 0 || index >= layer_count)
    return error_at(overrides.where(), "per_layer_config key", printable(key), "is not a layer index",
                    fmt::format("0 .. {}", layer_count - 1), printable(key));
  return index;
}

// Refuses, by name, the parts of Gemma 4 the forward does not build.
Status refuse_unbuilt(const Fields& text, const TextDefaults& defaults) {
  PLUMB_TRY_ASSIGN(per_layer_input,
                   text.integer_or("hidden_size_per_layer_input", defaults.hidden_size_per_layer_input));
  if (per_layer_input != 0)
    return refuse(text.where(), text.field_name("hidden_size_per_layer_input"), "per-layer embeddings (PLE)",
                  "0", std::to_string(per_layer_input));
  PLUMB_TRY_ASSIGN(shared, text.integer_or("num_kv_shared_layers", 0));
  if (shared != 0)
    return refuse(text.where(), text.field_name("num_kv_shared_layers"), "KV-shared layers", "0",
                  std::to_string(shared));
  PLUMB_TRY_ASSIGN(moe, text.boolean_or("enable_moe_block", false));
  if (moe)
    return refuse(text.where(), text.field_name("enable_moe_block"), "a mixture-of-experts block", "false",
                  "true");
  PLUMB_TRY_ASSIGN(bias, text.boolean_or("attention_bias", false));
  if (bias)
    return refuse(text.where(), text.field_name("attention_bias"), "attention projection biases", "false",
                  "true");
  PLUMB_TRY_ASSIGN(activation, text.string_or("hidden_activation", "gelu_pytorch_tanh"));
  if (activation != "gelu_pytorch_tanh")
    return refuse(text.where(), text.field_name("hidden_activation"), "another activation",
                  "gelu_pytorch_tanh", activation);
  PLUMB_TRY_ASSIGN(bidirectional, text.string_or("use_bidirectional_attention", ""));
  if (bidirectional == "all")
    return refuse(text.where(), text.field_name("use_bidirectional_attention"),
                  "bidirectional attention over all tokens", "null or \"vision\"", "\"all\"");
  return {};
}

Result<std::vector<std::string>> layer_types(const Fields& text, int64_t layer_count) {
  std::vector<std::string> types;
  if (!text.has("layer_types")) {
    // transformers' default: every sixth layer is full attention.
    for (int64_t i = 0; i < layer_count; ++i) types.push_back((i + 1) % 6 ? kSliding : kFull);
  } else {
    PLUMB_TRY_ASSIGN(listed, text.strings("layer_types"));
    types = std::move(listed);
  }
  if (static_cast<int64_t>(types.size()) != layer_count)
    return error_at(text.where(), "field", text.field_name("layer_types"), "has the wrong length",
                    fmt::format("num_hidden_layers = {}", layer_count), std::to_string(types.size()));
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] != kSliding && types[i] != kFull)
      return error_at(text.where(), "field", text.field_name(fmt::format("layer_types[{}]", i)),
                      "names an unknown layer type", "sliding_attention or full_attention", types[i]);
  // transformers forces the last layer to full attention; the weights were trained that way.
  if (!types.empty()) types.back() = kFull;
  return types;
}

// RoPE for one layer type from rope_parameters, with transformers' per-type defaults.
Result<ops::RopeSpec> rope_for(const Fields& text, const std::string& type, int64_t head_dim) {
  const bool full = type == kFull;
  ops::RopeSpec spec{full ? 1e6 : 1e4, head_dim, full ? 0.25 : 1.0};
  if (!text.has("rope_parameters")) return spec;
  PLUMB_TRY_ASSIGN(all, text.sub("rope_parameters"));
  if (!all.has(type)) return spec;
  PLUMB_TRY_ASSIGN(params, all.sub(type));
  PLUMB_TRY_ASSIGN(rope_type, params.string_or("rope_type", "default"));
  PLUMB_TRY_ASSIGN(theta, params.number_or("rope_theta", spec.theta));
  PLUMB_TRY_ASSIGN(factor, params.number_or("factor", 1.0));
  if (!(factor > 0.0))
    return error_at(params.where(), "field", params.field_name("factor"), "is out of range", "> 0",
                    fmt::format("{}", factor));
  spec.theta = theta;
  if (rope_type == "default") {
    spec.partial_rotary_factor = 1.0;  // transformers' default RoPE rotates the whole head, unscaled
  } else if (rope_type == "proportional") {
    spec.factor = factor;
    PLUMB_TRY_ASSIGN(partial, params.number_or("partial_rotary_factor", 1.0));
    if (!(partial > 0.0 && partial <= 1.0))
      return error_at(params.where(), "field", params.field_name("partial_rotary_factor"), "is out of range",
                      "0 < factor <= 1", fmt::format("{}", partial));
    spec.partial_rotary_factor = partial;
  } else {
    return refuse(params.where(), params.field_name("rope_type"), "another RoPE type",
                  "default or proportional", rope_type);
  }
  return spec;
}

struct HeadGeometry {
  int64_t heads, kv_heads, head_dim;
};

// Head geometry per layer: per_layer_config overrides when present, else global_head_dim and (with
// attention_k_eq_v) num_global_key_value_heads on full layers, as transformers derives them.
Result<std::vector<HeadGeometry>> head_geometry(const Fields& text, const std::vector<std::string>& types,
                                                const HeadGeometry& base, bool k_eq_v) {
  std::vector<HeadGeometry> layers(types.size(), base);
  if (text.has("per_layer_config")) {
    PLUMB_TRY_ASSIGN(overrides, text.sub("per_layer_config"));
    for (const auto& item : overrides.json().items()) {
      PLUMB_TRY_ASSIGN(index, layer_index(overrides, item.key(), static_cast<int64_t>(types.size())));
      PLUMB_TRY_ASSIGN(entry, overrides.sub(item.key()));
      PLUMB_TRY(only_keys(entry, {"head_dim", "num_key_value_heads", "num_attention_heads"}));
      HeadGeometry& layer = layers[static_cast<size_t>(index)];
      PLUMB_TRY_ASSIGN(head_dim, entry.integer_or("head_dim", layer.head_dim));
      PLUMB_TRY_ASSIGN(kv_heads, entry.integer_or("num_key_value_heads", layer.kv_heads));
      PLUMB_TRY_ASSIGN(heads, entry.integer_or("num_attention_heads", layer.heads));
      layer = {heads, kv_heads, head_dim};
    }
    return layers;
  }
  PLUMB_TRY_ASSIGN(global_head_dim, text.integer_or("global_head_dim", 512));
  std::optional<int64_t> global_kv_heads;
  if (text.has("num_global_key_value_heads")) {
    PLUMB_TRY_ASSIGN(kv_heads, text.integer("num_global_key_value_heads"));
    global_kv_heads = kv_heads;
  }
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

Result<std::vector<LayerSpec>> parse_layers(const Fields& text, int64_t window) {
  PLUMB_TRY_ASSIGN(layer_count, positive(text, "num_hidden_layers", 30));
  PLUMB_TRY_ASSIGN(types, layer_types(text, layer_count));
  PLUMB_TRY_ASSIGN(heads, positive(text, "num_attention_heads", 8));
  PLUMB_TRY_ASSIGN(kv_heads, positive(text, "num_key_value_heads", 4));
  PLUMB_TRY_ASSIGN(head_dim, positive(text, "head_dim", 256));
  PLUMB_TRY_ASSIGN(k_eq_v, text.boolean_or("attention_k_eq_v", false));
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

Status parse_scalars(const Fields& text, const TextDefaults& defaults, Config& config) {
  PLUMB_TRY_ASSIGN(hidden, positive(text, "hidden_size", 2304));
  PLUMB_TRY_ASSIGN(intermediate, positive(text, "intermediate_size", 9216));
  PLUMB_TRY_ASSIGN(vocab, positive(text, "vocab_size", 262144));
  PLUMB_TRY_ASSIGN(eps, text.number_or("rms_norm_eps", 1e-6));
  std::optional<double> softcap;
  if (text.has("final_logit_softcapping")) {
    PLUMB_TRY_ASSIGN(cap, text.number("final_logit_softcapping"));
    softcap = cap;
  }
  PLUMB_TRY_ASSIGN(tied, text.boolean_or("tie_word_embeddings", true));
  PLUMB_TRY_ASSIGN(window, positive(text, "sliding_window", defaults.sliding_window));
  PLUMB_TRY_ASSIGN(max_positions,
                   positive(text, "max_position_embeddings", defaults.max_position_embeddings));
  PLUMB_TRY_ASSIGN(bos, text.integer_or("bos_token_id", 2));
  PLUMB_TRY_ASSIGN(pad, text.integer_or("pad_token_id", 0));
  std::vector<int64_t> eos = {1};
  if (text.has("eos_token_id")) {
    PLUMB_TRY_ASSIGN(listed, text.integer_or_integers("eos_token_id"));
    eos = std::move(listed);
  }
  if (softcap && !(*softcap > 0.0))
    return error_at(text.where(), "field", text.field_name("final_logit_softcapping"), "is out of range",
                    "null or > 0", fmt::format("{}", *softcap));
  if (vocab > INT32_MAX)
    return error_at(text.where(), "field", text.field_name("vocab_size"), "is too large", "<= 2^31 - 1",
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
Result<Fields> text_part(const Fields& root, const std::string& model_type, Config& config) {
  if (model_type == "gemma4_text" || model_type == "gemma4_unified_text") {
    config.text_model_type = model_type;
    return root;
  }
  if (model_type != "gemma4" && model_type != "gemma4_unified")
    return error_at(root.where(), "field", "model_type", "is not a Gemma 4 model type",
                    "gemma4, gemma4_text, gemma4_unified or gemma4_unified_text", model_type);
  if (model_type == "gemma4" && root.has("audio_config"))
    return refuse(root.where(), "audio_config", "the audio encoder", "null", "an audio encoder config");
  if (!root.has("text_config"))
    return error_at(root.where(), "field", "text_config", "is missing", "the text model's config", "nothing");
  PLUMB_TRY_ASSIGN(text, root.sub("text_config"));
  config.text_model_type = model_type + "_text";
  return text;
}

}  // namespace

Result<Config> parse_config(const Fields& root) {
  Config config;
  PLUMB_TRY_ASSIGN(model_type, root.string_or("model_type", ""));
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

Result<Config> parse_config(const nlohmann::json& root, std::string_view where) {
  PLUMB_TRY_ASSIGN(fields, Fields::from_json(std::string(where), root));
  return parse_config(fields);
}

Result<nlohmann::json> read_json_file(const std::string& path) {
  PLUMB_TRY_ASSIGN(text, read_text_file(path, Fields::kMaxBytes));
  return parse_json_text(path, "file", printable(path), text);
}

Result<Config> load_config(const std::string& model_dir) {
  PLUMB_TRY_ASSIGN(fields, Fields::load(model_dir + "/config.json"));
  return parse_config(fields);
}

}  // namespace plumb::gemma4

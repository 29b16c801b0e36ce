#pragma once
// Gemma 4 text configuration from a checkpoint's config.json: model_type gemma4 / gemma4_unified (text under
// text_config) or gemma4_text / gemma4_unified_text (flat). Fields missing from the file take the defaults of
// the matching transformers config class. What the forward does not build is refused by name here, before any
// weight is read.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace plumb::gemma4 {

// config.json as core's typed reader sees it (plumb::Config; gemma4::Config below is the parsed result).
using Fields = plumb::Config;

enum class LayerKind : uint8_t { sliding, full };

// One decoder layer's attention geometry.
struct LayerSpec {
  LayerKind kind = LayerKind::sliding;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  bool k_eq_v = false;  // values are v_norm(k_proj(x)): no v_proj
  int64_t window = 0;   // sliding: the window W (a query sees W keys, itself included); full: 0
  ops::RopeSpec rope;
};

// MLX affine quantization of one module.
struct AffineSpec {
  int bits = 4;
  int group = 64;
  bool operator==(const AffineSpec&) const = default;
};

// config.json `quantization` (or the legacy `quantization_config`). A per-module entry (an MLX module path
// such as language_model.model.layers.3.mlp.down_proj) decides for its module: a spec, or nullopt for
// unquantized; modules without an entry are quantized with `defaults` exactly when their `.scales` tensor
// exists.
struct Quantization {
  bool present = false;
  AffineSpec defaults;
  std::map<std::string, std::optional<AffineSpec>> modules;
};

struct Config {
  std::string model_type;       // the top-level model_type
  std::string text_model_type;  // gemma4_text or gemma4_unified_text
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t vocab = 0;
  float rms_norm_eps = 1e-6f;
  std::optional<float> final_logit_softcapping;
  bool tie_word_embeddings = true;
  int64_t sliding_window = 0;
  int64_t max_position_embeddings = 0;
  std::vector<LayerSpec> layers;
  int32_t bos_token_id = 2;
  int32_t pad_token_id = 0;
  std::vector<int32_t> eos_token_ids;
  Quantization quantization;

  int64_t layer_count() const { return static_cast<int64_t>(layers.size()); }
};

// Parses config.json as read by core; errors name its source and the dotted field.
Result<Config> parse_config(const Fields& root);
// Parses a config.json document; `where` prefixes every error (usually the file's path).
Result<Config> parse_config(const nlohmann::json& root, std::string_view where);

// Reads and parses DIR/config.json.
Result<Config> load_config(const std::string& model_dir);

// Reads and parses a JSON file (at most Fields::kMaxBytes); errors name the file.
Result<nlohmann::json> read_json_file(const std::string& path);

}  // namespace plumb::gemma4

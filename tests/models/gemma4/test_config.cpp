// Gemma 4 config.json: both head-geometry forms, RoPE per layer type, transformers' defaults, quantization
// blocks, and refusal by name of what the forward does not build.
#include <gtest/gtest.h>

#include "models/gemma4/config.hpp"

namespace plumb::gemma4 {
namespace {

using nlohmann::json;

// A 12B-like unified config scaled down: 6 layers, the sixth full with K = V and proportional RoPE.
json unified_config() {
  return json::parse(R"({
    "model_type": "gemma4_unified",
    "text_config": {
      "model_type": "gemma4_unified_text", "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 6,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "global_head_dim": 64,
      "num_global_key_value_heads": 1, "attention_k_eq_v": true, "sliding_window": 8, "vocab_size": 512,
      "final_logit_softcapping": 30.0, "rms_norm_eps": 1e-6,
      "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                      "sliding_attention", "full_attention"],
      "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}
      }
    }
  })");
}

Config parse_ok(const json& document) {
  auto config = parse_config(document, "config.json");
  EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error().message);
  return config.ok() ? *config : Config{};
}

std::string parse_error(const json& document) {
  auto config = parse_config(document, "config.json");
  return config.ok() ? std::string("(parsed)") : config.error().message;
}

TEST(Gemma4Config, UnifiedFormGivesGlobalLayersTheirOwnGeometry) {
  const Config config = parse_ok(unified_config());
  ASSERT_EQ(config.layer_count(), 6);
  EXPECT_EQ(config.text_model_type, "gemma4_unified_text");
  const LayerSpec& sliding = config.layers[0];
  EXPECT_EQ(sliding.kind, LayerKind::sliding);
  EXPECT_EQ(sliding.heads, 4);
  EXPECT_EQ(sliding.kv_heads, 2);
  EXPECT_EQ(sliding.head_dim, 32);
  EXPECT_FALSE(sliding.k_eq_v);
  EXPECT_EQ(sliding.window, 8);
  EXPECT_EQ(sliding.rope.theta, 10000.0);
  EXPECT_EQ(sliding.rope.partial_rotary_factor, 1.0);
  EXPECT_EQ(sliding.rope.head_dim, 32);
  const LayerSpec& full = config.layers[5];
  EXPECT_EQ(full.kind, LayerKind::full);
  EXPECT_EQ(full.kv_heads, 1);
  EXPECT_EQ(full.head_dim, 64);
  EXPECT_TRUE(full.k_eq_v);
  EXPECT_EQ(full.window, 0);
  EXPECT_EQ(full.rope.theta, 1e6);
  EXPECT_EQ(full.rope.partial_rotary_factor, 0.25);
  EXPECT_EQ(full.rope.head_dim, 64);
  ASSERT_TRUE(config.final_logit_softcapping.has_value());
  EXPECT_EQ(*config.final_logit_softcapping, 30.0f);
  EXPECT_TRUE(config.tie_word_embeddings);
  EXPECT_EQ(config.eos_token_ids, std::vector<int32_t>{1});
}

TEST(Gemma4Config, PerLayerConfigFormOverridesByLayerIndex) {
  json document = unified_config();
  json& text = document["text_config"];
  text.erase("global_head_dim");
  text.erase("num_global_key_value_heads");
  text["per_layer_config"] = json::parse(R"({"5": {"head_dim": 128, "num_key_value_heads": 2}})");
  const Config config = parse_ok(document);
  EXPECT_EQ(config.layers[5].head_dim, 128);
  EXPECT_EQ(config.layers[5].kv_heads, 2);
  EXPECT_EQ(config.layers[5].rope.head_dim, 128);
  EXPECT_EQ(config.layers[4].head_dim, 32);
  text["per_layer_config"] = json::parse(R"({"6": {"head_dim": 128}})");
  EXPECT_NE(parse_error(document).find("'6'"), std::string::npos) << parse_error(document);
  text["per_layer_config"] = json::parse(R"({"5": {"sliding_window": 4}})");
  EXPECT_NE(parse_error(document).find("sliding_window"), std::string::npos) << parse_error(document);
}

TEST(Gemma4Config, GlobalKvHeadsApplyOnlyWithKeysAsValues) {
  json document = unified_config();
  document["text_config"]["attention_k_eq_v"] = false;
  const Config config = parse_ok(document);
  EXPECT_EQ(config.layers[5].kv_heads, 2);
  EXPECT_EQ(config.layers[5].head_dim, 64);
  EXPECT_FALSE(config.layers[5].k_eq_v);
}

TEST(Gemma4Config, FlatTextFormTakesTransformersDefaults) {
  json text = unified_config()["text_config"];
  text["model_type"] = "gemma4_text";
  text["hidden_size_per_layer_input"] = 0;
  text.erase("layer_types");
  text.erase("sliding_window");
  text.erase("rope_parameters");
  text["num_hidden_layers"] = 7;
  const Config config = parse_ok(text);
  ASSERT_EQ(config.layer_count(), 7);
  EXPECT_EQ(config.layers[5].kind, LayerKind::full);
  EXPECT_EQ(config.layers[4].kind, LayerKind::sliding);
  EXPECT_EQ(config.layers[6].kind, LayerKind::full) << "the last layer is forced to full attention";
  EXPECT_EQ(config.sliding_window, 512);
  EXPECT_EQ(config.layers[0].window, 512);
  EXPECT_EQ(config.layers[6].rope.partial_rotary_factor, 0.25);
}

TEST(Gemma4Config, RefusesUnbuiltPartsByName) {
  json text = unified_config()["text_config"];
  text["model_type"] = "gemma4_text";
  EXPECT_NE(parse_error(text).find("'hidden_size_per_layer_input'"), std::string::npos)
      << "gemma4_text defaults to per-layer embeddings: " << parse_error(text);
  text["hidden_size_per_layer_input"] = 0;
  text["num_kv_shared_layers"] = 2;
  EXPECT_NE(parse_error(text).find("KV-shared"), std::string::npos) << parse_error(text);
  text["num_kv_shared_layers"] = 0;
  text["enable_moe_block"] = true;
  EXPECT_NE(parse_error(text).find("'enable_moe_block'"), std::string::npos) << parse_error(text);
  text["enable_moe_block"] = false;
  text["rope_parameters"]["full_attention"]["rope_type"] = "yarn";
  EXPECT_NE(parse_error(text).find("rope_parameters.full_attention.rope_type"), std::string::npos)
      << parse_error(text);
  json with_audio = json{{"model_type", "gemma4"}, {"text_config", unified_config()["text_config"]}};
  with_audio["audio_config"] = json::object({{"hidden_size", 1024}});
  EXPECT_NE(parse_error(with_audio).find("'audio_config'"), std::string::npos) << parse_error(with_audio);
  EXPECT_NE(parse_error(json{{"model_type", "gemma3"}}).find("'model_type'"), std::string::npos);
}

TEST(Gemma4Config, WrongTypesNameTheFieldWithItsPath) {
  json document = unified_config();
  document["text_config"]["hidden_size"] = "wide";
  const std::string message = parse_error(document);
  EXPECT_NE(message.find("'text_config.hidden_size' has the wrong type; expected an integer"),
            std::string::npos)
      << message;
  document = unified_config();
  document["text_config"]["num_attention_heads"] = 3;
  EXPECT_NE(parse_error(document).find("group"), std::string::npos) << parse_error(document);
}

TEST(Gemma4Config, WholeFloatsAreReadAsIntegers) {
  json document = unified_config();
  document["text_config"]["hidden_size"] = 64.0;  // as some exporters write integers
  document["text_config"]["eos_token_id"] = json::array({1.0, 106});
  const Config config = parse_ok(document);
  EXPECT_EQ(config.hidden, 64);
  EXPECT_EQ(config.eos_token_ids, (std::vector<int32_t>{1, 106}));
  document["text_config"]["hidden_size"] = 64.5;
  EXPECT_NE(parse_error(document).find("'text_config.hidden_size' has the wrong type; expected an integer"),
            std::string::npos)
      << parse_error(document);
}

TEST(Gemma4Config, QuantizationBlockWithPerModuleOverrides) {
  json document = unified_config();
  document["quantization"] = json::parse(R"({
    "group_size": 32, "bits": 3, "mode": "affine",
    "language_model.model.layers.0.mlp.down_proj": {"bits": 8},
    "language_model.model.layers.1.mlp.down_proj": true,
    "language_model.model.layers.2.mlp.down_proj": false,
    "language_model.model.layers.3.mlp.down_proj": {}
  })");
  document["quantization_config"] = json::parse(R"({"group_size": 128, "bits": 2})");
  const Quantization& quantization = parse_ok(document).quantization;
  ASSERT_TRUE(quantization.present);
  EXPECT_EQ(quantization.defaults, (AffineSpec{3, 32})) << "quantization is read before quantization_config";
  const auto& modules = quantization.modules;
  EXPECT_EQ(modules.at("language_model.model.layers.0.mlp.down_proj"), (AffineSpec{8, 64}))
      << "a module object uses its own defaults";
  EXPECT_EQ(modules.at("language_model.model.layers.1.mlp.down_proj"), (AffineSpec{3, 32}));
  EXPECT_FALSE(modules.at("language_model.model.layers.2.mlp.down_proj").has_value());
  EXPECT_FALSE(modules.at("language_model.model.layers.3.mlp.down_proj").has_value());
  document["quantization"]["bits"] = 7;
  EXPECT_NE(parse_error(document).find("'quantization.bits'"), std::string::npos) << parse_error(document);
  document["quantization"]["bits"] = 4;
  document["quantization"]["mode"] = "mxfp4";
  EXPECT_NE(parse_error(document).find("'quantization.mode'"), std::string::npos) << parse_error(document);
}

}  // namespace
}  // namespace plumb::gemma4

// config.json getters: values, fallbacks, nested sub-configs, and errors naming the file and the dotted
// field.
#include <gtest/gtest.h>

#include "core/config.hpp"
#include "core/temp_dir.hpp"

namespace plumb {
namespace {

constexpr std::string_view kConfig = R"({
  "model_type": "gemma4",
  "tie_word_embeddings": true,
  "final_logit_softcapping": null,
  "text_config": {"model_type": "gemma4_text", "hidden_size": 2560, "rms_norm_eps": 1e-06,
                  "layer_types": ["sliding_attention", "full_attention"], "eos_token_id": [1, 106],
                  "head_dim": "256", "rope": {"theta": 10000}},
  "vision_config": {"hidden_size": 1152},
  "big": 18446744073709551615
})";

Config parsed() {
  auto config = Config::parse("dir/config.json", kConfig);
  EXPECT_TRUE(config.ok()) << config.error().message;
  return std::move(config).value();
}

TEST(Config, ReadsTypedValuesAtEveryLevel) {
  Config config = parsed();
  EXPECT_EQ(config.string("model_type").value(), "gemma4");
  EXPECT_TRUE(config.boolean("tie_word_embeddings").value());
  auto text = config.sub("text_config");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(text->prefix(), "text_config.");
  EXPECT_EQ(text->integer("hidden_size").value(), 2560);
  EXPECT_EQ(text->number("rms_norm_eps").value(), 1e-06);
  EXPECT_EQ(text->number("hidden_size").value(), 2560.0);
  EXPECT_EQ(text->strings("layer_types").value(),
            (std::vector<std::string>{"sliding_attention", "full_attention"}));
  EXPECT_EQ(text->integers("eos_token_id").value(), (std::vector<int64_t>{1, 106}));
  EXPECT_EQ(text->sub("rope")->integer("theta").value(), 10000);
}

TEST(Config, FallsBackOnlyWhenAbsentOrNull) {
  Config config = parsed();
  EXPECT_FALSE(config.has("final_logit_softcapping"));
  EXPECT_EQ(config.number_or("final_logit_softcapping", 30.0).value(), 30.0);
  EXPECT_EQ(config.integer_or("sliding_window", 512).value(), 512);
  EXPECT_EQ(config.string_or("missing", "x").value(), "x");
  auto wrong = config.integer_or("model_type", 0);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(
      wrong.error().message,
      "dir/config.json: field 'model_type' has the wrong type; expected an integer, got a string \"gemma4\"");
}

TEST(Config, ErrorsNameTheFileAndTheDottedField) {
  Config config = parsed();
  auto text = config.sub("text_config").value();
  EXPECT_EQ(
      text.integer("head_dim").error().message,
      "dir/config.json: field 'text_config.head_dim' has the wrong type; expected an integer, got a string "
      "\"256\"");
  EXPECT_EQ(
      text.integer("num_hidden_layers").error().message,
      "dir/config.json: field 'text_config.num_hidden_layers' is missing; expected an integer, got nothing");
  EXPECT_EQ(
      text.sub("rope").value().string("theta").error().message,
      "dir/config.json: field 'text_config.rope.theta' has the wrong type; expected a string, got an integer "
      "10000");
  EXPECT_EQ(
      config.sub("model_type").error().message,
      "dir/config.json: field 'model_type' has the wrong type; expected an object, got a string \"gemma4\"");
  EXPECT_EQ(text.integers("layer_types").error().message,
            "dir/config.json: field 'text_config.layer_types' has the wrong type; expected an array of "
            "integers, got "
            "an array [\"sliding_attention\",\"full_attention\"]");
  EXPECT_EQ(config.integer("big").error().message,
            "dir/config.json: field 'big' has the wrong type; expected an integer, got an integer "
            "18446744073709551615");
  EXPECT_EQ(
      config.integer("final_logit_softcapping").error().message,
      "dir/config.json: field 'final_logit_softcapping' has the wrong type; expected an integer, got null");
}

TEST(Config, LoadRefusesFilesThatAreNotJsonObjects) {
  testing::TempDir dir;
  testing::write_text(dir / "bad.json", "{\"a\": 1,}");
  testing::write_text(dir / "list.json", "[1]");
  testing::write_text(dir / "good.json", "{\"a\": 1}");
  std::string bad = (dir / "bad.json").string(), list = (dir / "list.json").string();
  EXPECT_EQ(Config::load(dir / "bad.json").error().message,
            bad + ": config 'json' is not valid JSON; expected a JSON object, got a syntax error at byte 9");
  EXPECT_EQ(Config::load(dir / "list.json").error().message,
            list + ": config 'json' is not an object; expected a JSON object, got an array");
  EXPECT_EQ(Config::load(dir / "good.json")->integer("a").value(), 1);
  auto missing = Config::load(dir / "none.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(
      missing.error().message.rfind((dir / "none.json").string() + ": file 'none.json' cannot be opened", 0),
      0u)
      << missing.error().message;
}

}  // namespace
}  // namespace plumb

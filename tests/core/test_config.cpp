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

TEST(Config, IntegersMayBeWrittenAsWholeFloats) {
  auto config =
      Config::parse("c.json", R"({"a": 1024.0, "b": 1024.5, "c": 1e300, "d": [1, 2.0], "e": -3.0})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->integer("a").value(), 1024);
  EXPECT_EQ(config->integer("e").value(), -3);
  EXPECT_EQ(config->integers("d").value(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(config->integer("b").error().message,
            "c.json: field 'b' has the wrong type; expected an integer, got a number 1024.5");
  EXPECT_EQ(config->integer("c").error().message,
            "c.json: field 'c' has the wrong type; expected an integer, got a number 1e+300");
}

TEST(Config, OneIntegerOrAnArrayOfThem) {
  auto config = Config::parse("g.json", R"({"one": 106, "many": [1, 106], "bad": [1, "x"], "text": "1"})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->integer_or_integers("one").value(), (std::vector<int64_t>{106}));
  EXPECT_EQ(config->integer_or_integers("many").value(), (std::vector<int64_t>{1, 106}));
  EXPECT_EQ(
      config->integer_or_integers("bad").error().message,
      "g.json: field 'bad' has the wrong type; expected an integer or an array of integers, got an array "
      "[1,\"x\"]");
  EXPECT_EQ(
      config->integer_or_integers("text").error().message,
      "g.json: field 'text' has the wrong type; expected an integer or an array of integers, got a string "
      "\"1\"");
  EXPECT_EQ(config->integer_or_integers("none").error().message,
            "g.json: field 'none' is missing; expected an integer or an array of integers, got nothing");
}

TEST(Config, FromJsonTakesAParsedObject) {
  auto config = Config::from_json("doc", nlohmann::json{{"text_config", {{"hidden_size", 8}}}});
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->sub("text_config")->integer("hidden_size").value(), 8);
  EXPECT_EQ(config->sub("text_config")->field_name("hidden_size"), "text_config.hidden_size");
  EXPECT_EQ(Config::from_json("doc", nlohmann::json::array()).error().message,
            "doc: config 'json' is not an object; expected a JSON object, got an array");
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

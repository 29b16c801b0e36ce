// Malformed or unsupported tokenizer.json documents give an error naming the problem, never a crash.
#include <string>
#include <vector>

#include "text/tokenizer/tokenizer.hpp"
#include "text/tokenizer/tokenizer_test_util.hpp"

namespace plumb::text::testing {
namespace {

struct Case {
  std::string name;
  std::string json;
  std::string expected_in_error;
};

std::string valid_text() {
  return document(bpe_model({"a", "b", "ab"}, {"a b"})).dump();
}

Json with(const std::string& key, Json value) {
  Json root = document(bpe_model({"a", "b", "ab"}, {"a b"}));
  root[key] = std::move(value);
  return root;
}

Json model_with(const std::string& key, Json value) {
  Json model = bpe_model({"a", "b", "ab"}, {"a b"});
  model[key] = std::move(value);
  return document(model);
}

std::vector<Case> cases() {
  const std::string valid = valid_text();
  std::string deep = "{\"model\": " + bpe_model({"a"}, {}).dump() + ", \"normalizer\": ";
  for (int i = 0; i < 200; ++i) deep += "{\"type\": \"Sequence\", \"normalizers\": [";
  deep += "{\"type\": \"Lowercase\"}";
  for (int i = 0; i < 200; ++i) deep += "]}";
  deep += "}";
  return {
      {"not json", "{\"model\": ", "is not valid JSON"},
      {"truncated", valid.substr(0, valid.size() / 2), "is not valid JSON"},
      {"array root", "[1, 2]", "is not an object"},
      {"empty", "", "is not valid JSON"},
      {"no model", "{\"version\": \"1.0\"}", "'model' is missing"},
      {"unknown version", with("version", "2.0").dump(), "'version' is not known"},
      {"truncation set", with("truncation", {{"max_length", 8}}).dump(), "'truncation' is not supported"},
      {"padding set", with("padding", {{"length", 8}}).dump(), "'padding' is not supported"},
      {"wordpiece model", document({{"type", "WordPiece"}, {"vocab", Json::object()}}).dump(),
       "'WordPiece' is not supported"},
      {"unigram model", document({{"type", "Unigram"}}).dump(), "'Unigram' is not supported"},
      {"model without type", document({{"vocab", Json::object()}}).dump(), "'type' is missing"},
      {"vocab as list", model_with("vocab", Json::array({"a"})).dump(),
       "'vocab' is missing or not an object"},
      {"negative id", model_with("vocab", {{"a", -1}}).dump(), "'a' has an invalid id"},
      {"string id", model_with("vocab", {{"a", "0"}}).dump(), "'a' has an invalid id"},
      {"merges missing", document({{"type", "BPE"}, {"vocab", {{"a", 0}}}}).dump(), "'merges' is missing"},
      {"merge of unknown token", model_with("merges", {"a c"}).dump(), "'c' is not in the vocabulary"},
      {"merge result unknown", model_with("merges", {"b a"}).dump(), "'ba' is not in the vocabulary"},
      {"merge with three parts", model_with("merges", {"a b c"}).dump(), "is not two tokens"},
      {"mixed merges", model_with("merges", Json::array({"a b", Json::array({"a", "b"})})).dump(),
       "has the wrong shape"},
      {"dropout", model_with("dropout", 0.1).dump(), "'dropout' is not supported"},
      {"unk not string", model_with("unk_token", 3).dump(), "'unk_token' is not a string"},
      {"byte_fallback not bool", model_with("byte_fallback", "yes").dump(),
       "'byte_fallback' is not a boolean"},
      {"bert normalizer", with("normalizer", {{"type", "BertNormalizer"}}).dump(),
       "'BertNormalizer' is not supported"},
      {"precompiled normalizer", with("normalizer", {{"type", "Precompiled"}}).dump(),
       "'Precompiled' is not supported"},
      {"normalizer without type", with("normalizer", {{"x", 1}}).dump(), "'type' is missing"},
      {"replace without pattern", with("normalizer", {{"type", "Replace"}, {"content", "x"}}).dump(),
       "is not a pattern"},
      {"bad regex",
       with("normalizer", {{"type", "Replace"}, {"pattern", {{"Regex", "(ab"}}}, {"content", ""}}).dump(),
       "does not compile"},
      {"unicode scripts", with("pre_tokenizer", {{"type", "UnicodeScripts"}}).dump(),
       "'UnicodeScripts' is not supported"},
      {"bad behavior",
       with("pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}})
           .dump(),
       "'Sideways' is not known"},
      {"metaspace two chars", with("pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "ab"}}).dump(),
       "'replacement' is not a single character"},
      {"metaspace scheme",
       with("pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "x"}}).dump(),
       "'prepend_scheme' is not known"},
      {"sequence not list", with("pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", 3}}).dump(),
       "'pretokenizers' is missing or not a list"},
      {"ctc decoder", with("decoder", {{"type", "CTC"}}).dump(), "'CTC' is not supported"},
      {"strip negative",
       with("decoder", {{"type", "Strip"}, {"content", " "}, {"start", -1}, {"stop", 0}}).dump(),
       "'start' is not a valid count"},
      {"bert processing", with("post_processor", {{"type", "BertProcessing"}}).dump(),
       "'BertProcessing' is not supported"},
      {"template without special",
       with("post_processor", {{"type", "TemplateProcessing"},
                               {"single", {{{"SpecialToken", {{"id", "<x>"}, {"type_id", 0}}}}}},
                               {"special_tokens", Json::object()}})
           .dump(),
       "'<x>' is not declared"},
      {"template with B",
       with("post_processor",
            {{"type", "TemplateProcessing"}, {"single", {{{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}}})
           .dump(),
       "does not name sequence A"},
      {"added tokens not list", with("added_tokens", 3).dump(), "'added_tokens' is not a list"},
      {"added token without content", with("added_tokens", {{{"id", 0}}}).dump(), "'content' is missing"},
      {"added token bad flag", with("added_tokens", {{{"id", 0}, {"content", "x"}, {"lstrip", 1}}}).dump(),
       "'lstrip' is not a boolean"},
      {"nested too deeply", deep, "nested too deeply"},
  };
}

TEST(Malformed, EveryCaseGivesANamedError) {
  for (const Case& c : cases()) {
    auto tokenizer = Tokenizer::from_json(c.json, "bad.json");
    ASSERT_FALSE(tokenizer.ok()) << c.name << ": loaded; expected an error containing '"
                                 << c.expected_in_error << "'";
    const std::string& message = tokenizer.error().message;
    EXPECT_NE(message.find(c.expected_in_error), std::string::npos)
        << c.name << ": expected '" << c.expected_in_error << "' in the error, got '" << message << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos) << c.name << ": error spans lines: " << message;
  }
}

TEST(Malformed, TheValidDocumentLoads) {
  auto tokenizer = Tokenizer::from_json(valid_text(), "ok.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  EXPECT_EQ(pieces(*tokenizer, "abab"), (Strings{"ab", "ab"}));
}

TEST(Malformed, EveryPrefixOfAValidDocumentIsRefusedCleanly) {
  const std::string valid =
      with("pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}).dump();
  for (size_t length = 0; length < valid.size(); ++length) {
    auto tokenizer = Tokenizer::from_json(valid.substr(0, length), "cut.json");
    EXPECT_FALSE(tokenizer.ok()) << "prefix of length " << length << " of " << valid.size() << " loaded";
  }
}

TEST(Malformed, InvalidUtf8TextIsRefusedAtEncode) {
  auto tokenizer = Tokenizer::from_json(valid_text(), "ok.json");
  ASSERT_TRUE(tokenizer.ok());
  for (const std::string& text : {std::string("a\xff"), std::string("\xc3"), std::string("\xed\xa0\x80"),
                                  std::string("\xc0\xaf"), std::string("ab\xf4\x90\x80\x80")}) {
    auto ids = tokenizer->encode(text);
    ASSERT_FALSE(ids.ok()) << "encoded invalid UTF-8 of " << text.size() << " bytes";
    EXPECT_NE(ids.error().message.find("is not valid UTF-8"), std::string::npos) << ids.error().message;
  }
}

TEST(Malformed, MissingFileIsNamed) {
  auto tokenizer = Tokenizer::load("/nonexistent/dir/tokenizer.json");
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.error().message.find("cannot be opened"), std::string::npos)
      << tokenizer.error().message;
}

}  // namespace
}  // namespace plumb::text::testing

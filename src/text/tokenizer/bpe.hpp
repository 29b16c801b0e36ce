#pragma once
// The BPE model of tokenizer.json: vocab, ranked merges, byte fallback, unknown-token fusing, ignore_merges.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "text/tokenizer/json_fields.hpp"

namespace plumb::text {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Open-addressing map from a pair of token ids to (rank, merged id).
class MergeMap {
 public:
  struct Merge {
    uint32_t rank;
    int32_t merged;
  };
  void reserve(size_t count);
  void insert_or_assign(int32_t left, int32_t right, Merge merge);
  const Merge* find(int32_t left, int32_t right) const {
    if (keys_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t slot = slot_of(key);; slot = (slot + 1) & mask_) {
      if (keys_[slot] == key) return &values_[slot];
      if (keys_[slot] == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }
  std::vector<uint64_t> keys_;
  std::vector<Merge> values_;
  size_t mask_ = 0;
  int shift_ = 0;
};

class BpeModel {
 public:
  static Result<BpeModel> parse(const Json& node, std::string_view where);

  // Appends the ids of one pre-tokenized word.
  Status tokenize(std::string_view word, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;
  size_t vocab_size() const { return vocab_.size(); }
  int32_t max_id() const { return max_id_; }

 private:
  struct Cache;
  static std::shared_ptr<Cache> new_cache();
  Status merge_word(std::string_view word, std::vector<int32_t>& ids) const;
  Status initial_symbols(std::string_view word) const;
  int32_t char_id(std::string_view symbol, char32_t cp) const;

  Vocab vocab_;
  std::unordered_map<int32_t, std::string> tokens_;
  MergeMap merges_;
  std::vector<int32_t> bmp_ids_;         // single-code-point tokens below U+10000, -1 where absent
  std::array<int32_t, 256> byte_ids_{};  // "<0xXX>" tokens, -1 where absent
  std::optional<std::string> unk_token_;
  int32_t unk_id_ = -1;
  int32_t max_id_ = -1;
  std::string prefix_;  // continuing_subword_prefix
  std::string suffix_;  // end_of_word_suffix
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::shared_ptr<Cache> cache_;
};

}  // namespace plumb::text

#include "text/tokenizer/bpe.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <mutex>

#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

void MergeMap::reserve(size_t count) {
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, count * 2));
  keys_.assign(capacity, kEmpty);
  values_.assign(capacity, Merge{0, 0});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
}

void MergeMap::insert_or_assign(int32_t left, int32_t right, Merge merge) {
  const uint64_t key = pack(left, right);
  for (size_t slot = slot_of(key);; slot = (slot + 1) & mask_) {
    if (keys_[slot] == key || keys_[slot] == kEmpty) {
      keys_[slot] = key;
      values_[slot] = merge;
      return;
    }
  }
}

// Words already merged, as `tokenizers` caches them (words under 256 bytes, at most 10000 of them).
struct BpeModel::Cache {
  static constexpr size_t kCapacity = 10000;
  static constexpr size_t kMaxWordBytes = 256;
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
};

std::shared_ptr<BpeModel::Cache> BpeModel::new_cache() {
  return std::make_shared<Cache>();
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t length;  // bytes of the word it covers; 0 once merged into its left neighbour
};

struct QueuedMerge {
  uint32_t rank;
  uint32_t pos;
  int32_t merged;
};

// Lowest rank first, then leftmost, as the merge queue of `tokenizers` orders them.
struct LaterMerge {
  bool operator()(const QueuedMerge& a, const QueuedMerge& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};
constexpr LaterMerge later_merge;

struct WordState {
  std::vector<Symbol> symbols;
  std::vector<QueuedMerge> queue;
  std::string symbol_text;
  void add(int32_t id, uint32_t length) {
    const auto index = static_cast<int32_t>(symbols.size());
    if (index > 0) symbols.back().next = index;
    symbols.push_back({id, index - 1, -1, length});
  }
};

WordState& word_state() {
  thread_local WordState state;
  return state;
}

}  // namespace

int32_t BpeModel::char_id(std::string_view symbol, char32_t cp) const {
  if (cp < bmp_ids_.size()) return bmp_ids_[cp];
  auto found = vocab_.find(symbol);
  return found == vocab_.end() ? -1 : found->second;
}

Status BpeModel::initial_symbols(std::string_view word) const {
  WordState& state = word_state();
  state.symbols.clear();
  const bool plain = prefix_.empty() && suffix_.empty();
  bool unk_pending = false;
  uint32_t unk_length = 0;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t begin = pos;
    const char32_t cp = next_code_point(word, pos);
    const auto length = static_cast<uint32_t>(pos - begin);
    std::string_view symbol = word.substr(begin, length);
    int32_t id = -1;
    if (plain) {
      id = char_id(symbol, cp);
    } else {
      state.symbol_text.clear();
      if (begin > 0) state.symbol_text += prefix_;
      state.symbol_text += symbol;
      if (pos == word.size()) state.symbol_text += suffix_;
      symbol = state.symbol_text;
      auto found = vocab_.find(symbol);
      id = found == vocab_.end() ? -1 : found->second;
    }
    if (id >= 0) {
      if (unk_pending) state.add(unk_id_, unk_length);
      unk_pending = false;
      state.add(id, length);
      continue;
    }
    if (byte_fallback_ && std::all_of(symbol.begin(), symbol.end(), [&](char byte) {
          return byte_ids_[static_cast<unsigned char>(byte)] >= 0;
        })) {
      // As in `tokenizers`, byte tokens go in before an unknown token still pending.
      for (char byte : symbol) state.add(byte_ids_[static_cast<unsigned char>(byte)], 1);
      continue;
    }
    if (!unk_token_) continue;
    if (unk_id_ < 0)
      return error_at("tokenizer", "unk_token", *unk_token_, "is not in the vocabulary", "a vocabulary token",
                      "an unknown token");
    if (unk_pending && fuse_unk_) {
      unk_length += length;
    } else {
      if (unk_pending) state.add(unk_id_, unk_length);
      unk_pending = true;
      unk_length = length;
    }
  }
  if (unk_pending) state.add(unk_id_, unk_length);
  return {};
}

Status BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  PLUMB_TRY(initial_symbols(word));
  WordState& state = word_state();
  std::vector<Symbol>& symbols = state.symbols;
  std::vector<QueuedMerge>& queue = state.queue;
  queue.clear();
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const MergeMap::Merge* merge = merges_.find(symbols[i].id, symbols[i + 1].id))
      queue.push_back({merge->rank, static_cast<uint32_t>(i), merge->merged});
  std::make_heap(queue.begin(), queue.end(), later_merge);
  const auto push = [&](QueuedMerge merge) {
    queue.push_back(merge);
    std::push_heap(queue.begin(), queue.end(), later_merge);
  };
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later_merge);
    const QueuedMerge top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.length == 0 || left.next < 0) continue;
    const Symbol right = symbols[left.next];
    // A queued pair whose symbols changed since it was queued is stale.
    const MergeMap::Merge* current = merges_.find(left.id, right.id);
    if (current == nullptr || current->merged != top.merged) continue;
    symbols[left.next].length = 0;
    left.id = top.merged;
    left.length += right.length;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = static_cast<int32_t>(top.pos);
    if (left.prev >= 0)
      if (const MergeMap::Merge* merge = merges_.find(symbols[left.prev].id, left.id))
        push({merge->rank, static_cast<uint32_t>(left.prev), merge->merged});
    if (left.next >= 0)
      if (const MergeMap::Merge* merge = merges_.find(left.id, symbols[left.next].id))
        push({merge->rank, top.pos, merge->merged});
  }
  for (const Symbol& symbol : symbols)
    if (symbol.length != 0) ids.push_back(symbol.id);
  return {};
}

Status BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return {};
  if (ignore_merges_)
    if (auto found = vocab_.find(word); found != vocab_.end()) {
      ids.push_back(found->second);
      return {};
    }
  const bool cacheable = word.size() < Cache::kMaxWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_->mutex);
    if (auto hit = cache_->words.find(word); hit != cache_->words.end()) {
      ids.insert(ids.end(), hit->second.begin(), hit->second.end());
      return {};
    }
  }
  const size_t first = ids.size();
  PLUMB_TRY(merge_word(word, ids));
  if (cacheable) {
    std::lock_guard lock(cache_->mutex);
    if (cache_->words.size() < Cache::kCapacity)
      cache_->words.emplace(std::string(word), std::vector<int32_t>(ids.begin() + first, ids.end()));
  }
  return {};
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto found = vocab_.find(token);
  if (found == vocab_.end()) return std::nullopt;
  return found->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  auto found = tokens_.find(id);
  return found == tokens_.end() ? nullptr : &found->second;
}

}  // namespace plumb::text

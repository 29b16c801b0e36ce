#include "text/tokenizer/added_vocabulary.hpp"

#include <algorithm>
#include <limits>

#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

int32_t TokenTrie::child(int32_t node, unsigned char byte) const {
  const auto& children = nodes_[node].children;
  auto found =
      std::lower_bound(children.begin(), children.end(), std::pair<unsigned char, int32_t>(byte, -1));
  return found != children.end() && found->first == byte ? found->second : -1;
}

bool TokenTrie::insert(std::string_view pattern, int32_t value) {
  int32_t node = -1;
  for (unsigned char byte : pattern) {
    int32_t next = node < 0 ? root_[byte] : child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      if (node < 0) {
        root_[byte] = next;
      } else {
        auto& children = nodes_[node].children;
        children.insert(
            std::upper_bound(children.begin(), children.end(), std::pair<unsigned char, int32_t>(byte, -1)),
            {byte, next});
      }
    }
    node = next;
  }
  if (nodes_[node].value >= 0) return false;
  nodes_[node].value = value;
  return true;
}

size_t TokenTrie::longest_at(std::string_view text, size_t pos, int32_t* value) const {
  size_t best = 0;
  int32_t node = root_[static_cast<unsigned char>(text[pos])];
  for (size_t at = pos + 1; node >= 0; ++at) {
    if (nodes_[node].value >= 0) {
      best = at - pos;
      *value = nodes_[node].value;
    }
    if (at == text.size()) break;
    node = child(node, static_cast<unsigned char>(text[at]));
  }
  return best;
}

namespace {

bool last_is_word(std::string_view text) {
  if (text.empty()) return false;
  size_t start = text.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return is_regex_word(next_code_point(text, start));
}

bool first_is_word(std::string_view text) {
  size_t pos = 0;
  return !text.empty() && is_regex_word(next_code_point(text, pos));
}

// Start of the run of white space that ends `text`.
size_t trailing_space_start(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!is_white_space(next_code_point(text, pos))) break;
    end = start;
  }
  return end;
}

// End of the run of white space that starts `text`.
size_t leading_space_end(std::string_view text) {
  size_t pos = 0, end = 0;
  while (pos < text.size() && is_white_space(next_code_point(text, pos))) end = pos;
  return end;
}

Result<AddedToken> parse_token(const Json& item, std::string_view where, int64_t* id) {
  PLUMB_TRY(expect_object(item, where, "added token"));
  AddedToken token;
  auto content = string_field(item, "content", where);
  if (!content.ok()) return content.error();
  token.content = std::move(*content);
  auto declared = count_field(item, "id", -1, std::numeric_limits<int32_t>::max(), where);
  if (!declared.ok()) return declared.error();
  *id = *declared;
  for (auto [key, field, fallback] :
       {std::tuple{"single_word", &token.single_word, false}, std::tuple{"lstrip", &token.lstrip, false},
        std::tuple{"rstrip", &token.rstrip, false}, std::tuple{"normalized", &token.normalized, true},
        std::tuple{"special", &token.special, false}}) {
    auto value = bool_field(item, key, fallback, where);
    if (!value.ok()) return value.error();
    *field = *value;
  }
  return token;
}

}  // namespace

Result<AddedVocabulary> AddedVocabulary::parse(const Json& list, const BpeModel& model,
                                               const Normalizer* normalizer, std::string_view where) {
  AddedVocabulary vocabulary;
  if (list.is_null()) return vocabulary;
  if (!list.is_array())
    return error_at(where, "field", "added_tokens", "is not a list", "a list of tokens",
                    json_type_name(list));
  auto next_id = static_cast<int32_t>(model.vocab_size());
  for (const Json& item : list) {
    int64_t declared_id = -1;
    auto token = parse_token(item, where, &declared_id);
    if (!token.ok()) return token.error();
    if (token->content.empty()) continue;
    // `tokenizers` keeps the vocabulary's id for a token it already has and numbers new ones after the
    // vocabulary.
    std::optional<int32_t> id = vocabulary.token_to_id(token->content);
    if (!id) id = model.token_to_id(token->content);
    if (!id) id = next_id++;
    vocabulary.ids_[token->content] = *id;
    if (token->special) vocabulary.special_contents_.insert(token->content);
    vocabulary.max_id_ = std::max(vocabulary.max_id_, *id);
    vocabulary.tokens_[*id] = std::move(*token);
  }
  std::vector<std::pair<int32_t, const AddedToken*>> ordered;
  for (const auto& [id, token] : vocabulary.tokens_) ordered.emplace_back(id, &token);
  std::sort(ordered.begin(), ordered.end());
  std::string pattern;
  for (const auto& [id, token] : ordered) {
    pattern = token->content;
    if (token->normalized && normalizer != nullptr) PLUMB_TRY(normalizer->normalize(token->content, pattern));
    TokenTrie& trie = token->normalized ? vocabulary.normalized_trie_ : vocabulary.raw_trie_;
    if (pattern.empty())
      return error_at(where, "added token", token->content, "normalizes to nothing", "a non-empty pattern",
                      "''");
    if (!trie.insert(pattern, id))
      return error_at(where, "added token", token->content, "matches the same text as another added token",
                      "distinct patterns", pattern);
  }
  return vocabulary;
}

void AddedVocabulary::find_matches(std::string_view text, const TokenTrie& trie,
                                   std::vector<std::pair<int32_t, Span>>& out) const {
  out.clear();
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t id = -1;
    const size_t length = trie.longest_at(text, pos, &id);
    if (length == 0) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + length;
    pos = stop;  // the search goes on after this match even when the checks below drop it
    const AddedToken& token = tokens_.at(id);
    if (token.single_word) {
      const bool space_before = start == 0 || !last_is_word(text.substr(0, start));
      const bool space_after = stop == text.size() || !first_is_word(text.substr(stop));
      if (!space_before || !space_after) continue;
    }
    if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += leading_space_end(text.substr(stop));
    if (start_offset < start)
      out.push_back({-1, {static_cast<uint32_t>(start_offset), static_cast<uint32_t>(start), false}});
    out.push_back({id, {static_cast<uint32_t>(start), static_cast<uint32_t>(stop), true}});
    start_offset = stop;
  }
  if (start_offset != text.size())
    out.push_back({-1, {static_cast<uint32_t>(start_offset), static_cast<uint32_t>(text.size()), false}});
}

Status AddedVocabulary::split_on(PieceList& pieces, const TokenTrie& trie) const {
  if (trie.empty()) return {};
  thread_local std::vector<std::pair<int32_t, Span>> matches;
  thread_local std::vector<Piece> next;
  next.clear();
  for (const Piece& piece : pieces.pieces) {
    if (piece.token >= 0) {
      next.push_back(piece);
      continue;
    }
    find_matches(pieces.text(piece), trie, matches);
    for (const auto& [id, span] : matches) {
      if (span.begin == span.end) continue;
      next.push_back(
          {piece.begin + span.begin, piece.begin + span.end, id, piece.at_origin && span.begin == 0});
    }
  }
  pieces.pieces.swap(next);
  return {};
}

Status AddedVocabulary::extract_and_normalize(PieceList& pieces, const Normalizer* normalizer) const {
  PLUMB_TRY(split_on(pieces, raw_trie_));
  if (normalizer != nullptr)
    PLUMB_TRY(pieces.transform_each(
        [&](std::string_view text, bool, std::string& out) { return normalizer->normalize(text, out); }));
  return split_on(pieces, normalized_trie_);
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  auto found = ids_.find(content);
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

const AddedToken* AddedVocabulary::token_of(int32_t id) const {
  auto found = tokens_.find(id);
  return found == tokens_.end() ? nullptr : &found->second;
}

}  // namespace plumb::text

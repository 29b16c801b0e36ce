// Reading the BPE model of tokenizer.json, with the checks `tokenizers` makes when it builds one.
#include <algorithm>
#include <limits>

#include "text/tokenizer/bpe.hpp"
#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

namespace {

using MergePairs = std::vector<std::pair<std::string, std::string>>;

Result<Vocab> parse_vocab(const Json& node, std::string_view where) {
  auto found = node.find("vocab");
  if (found == node.end() || !found->is_object())
    return error_at(where, "model field", "vocab", "is missing or not an object", "an object of token: id",
                    found == node.end() ? "nothing" : json_type_name(*found));
  Vocab vocab;
  vocab.reserve(found->size());
  for (const auto& [token, id] : found->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return error_at(where, "vocab token", token, "has an invalid id", "an integer in [0, 2^31)", id.dump());
    vocab[token] = static_cast<int32_t>(id.get<int64_t>());
  }
  return vocab;
}

// Merges come as ["a", "b"] pairs or as legacy "a b" strings (lines starting "#version" skipped).
Result<MergePairs> parse_merges(const Json& node, std::string_view where) {
  auto found = node.find("merges");
  if (found == node.end() || !found->is_array())
    return error_at(where, "model field", "merges", "is missing or not a list", "a list of merges",
                    found == node.end() ? "nothing" : json_type_name(*found));
  MergePairs merges;
  merges.reserve(found->size());
  const bool as_strings = !found->empty() && found->front().is_string();
  for (size_t i = 0; i < found->size(); ++i) {
    const Json& item = (*found)[i];
    if (as_strings && item.is_string()) {
      const std::string& line = item.get_ref<const std::string&>();
      if (line.starts_with("#version")) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
        return error_at(where, "merge", std::to_string(i), "is not two tokens", "\"a b\"", line);
      merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (!as_strings && item.is_array() && item.size() == 2 && item[0].is_string() &&
               item[1].is_string()) {
      merges.emplace_back(item[0].get<std::string>(), item[1].get<std::string>());
    } else {
      return error_at(where, "merge", std::to_string(i), "has the wrong shape",
                      as_strings ? "a string \"a b\" like the first merge" : "a pair [\"a\", \"b\"]",
                      item.dump().substr(0, 80));
    }
  }
  return merges;
}

Result<std::optional<std::string>> optional_string(const Json& node, std::string_view key,
                                                   std::string_view where) {
  auto found = node.find(key);
  if (found == node.end() || found->is_null()) return std::optional<std::string>();
  if (!found->is_string())
    return error_at(where, "model field", key, "is not a string", "a string or null", found->dump());
  return std::optional<std::string>(found->get<std::string>());
}

Status check_dropout(const Json& node, std::string_view where) {
  auto found = node.find("dropout");
  if (found == node.end() || found->is_null()) return {};
  if (found->is_number() && found->get<double>() == 0.0) return {};
  return error_at(where, "model field", "dropout", "is not supported (it makes encoding random)", "null",
                  found->dump());
}

}  // namespace

Result<BpeModel> BpeModel::parse(const Json& node, std::string_view where) {
  auto type = component_type(node, where, "model");
  if (!type.ok()) return type.error();
  if (*type != "BPE") return error_at(where, "model", *type, "is not supported", "BPE", *type);
  PLUMB_TRY(check_dropout(node, where));
  BpeModel model;
  auto vocab = parse_vocab(node, where);
  if (!vocab.ok()) return vocab.error();
  model.vocab_ = std::move(*vocab);
  auto merges = parse_merges(node, where);
  if (!merges.ok()) return merges.error();
  auto unk = optional_string(node, "unk_token", where);
  auto prefix = optional_string(node, "continuing_subword_prefix", where);
  auto suffix = optional_string(node, "end_of_word_suffix", where);
  auto byte_fallback = bool_field(node, "byte_fallback", false, where);
  auto fuse_unk = bool_field(node, "fuse_unk", false, where);
  auto ignore_merges = bool_field(node, "ignore_merges", false, where);
  if (!unk.ok()) return unk.error();
  if (!prefix.ok()) return prefix.error();
  if (!suffix.ok()) return suffix.error();
  if (!byte_fallback.ok()) return byte_fallback.error();
  if (!fuse_unk.ok()) return fuse_unk.error();
  if (!ignore_merges.ok()) return ignore_merges.error();
  model.unk_token_ = *unk;
  model.prefix_ = prefix->value_or("");
  model.suffix_ = suffix->value_or("");
  model.byte_fallback_ = *byte_fallback;
  model.fuse_unk_ = *fuse_unk;
  model.ignore_merges_ = *ignore_merges;
  if (model.unk_token_)
    if (auto id = model.token_to_id(*model.unk_token_)) model.unk_id_ = *id;

  model.tokens_.reserve(model.vocab_.size());
  model.bmp_ids_.assign(0x10000, -1);
  model.byte_ids_.fill(-1);
  for (const auto& [token, id] : model.vocab_) {
    model.tokens_[id] = token;
    model.max_id_ = std::max(model.max_id_, id);
    size_t pos = 0;
    const char32_t cp = next_code_point(token, pos);
    if (pos == token.size() && cp < 0x10000) model.bmp_ids_[cp] = id;
  }
  for (int byte = 0; byte < 256; ++byte)
    if (auto id = model.token_to_id(fmt::format("<0x{:02X}>", byte))) model.byte_ids_[byte] = *id;

  model.merges_.reserve(merges->size());
  std::string merged;
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const auto& [left, right] = (*merges)[rank];
    auto left_id = model.token_to_id(left);
    auto right_id = model.token_to_id(right);
    if (!left_id || !right_id)
      return error_at(where, "merge token", left_id ? right : left, "is not in the vocabulary",
                      "both tokens of a merge in vocab", fmt::format("merge {} '{} {}'", rank, left, right));
    if (right.size() < model.prefix_.size())
      return error_at(where, "merge token", right, "is shorter than continuing_subword_prefix", model.prefix_,
                      right);
    merged.assign(left);
    merged.append(right, model.prefix_.size());
    auto merged_id = model.token_to_id(merged);
    if (!merged_id)
      return error_at(where, "merged token", merged, "is not in the vocabulary", "the merge result in vocab",
                      fmt::format("merge {} '{} {}'", rank, left, right));
    model.merges_.insert_or_assign(*left_id, *right_id, {static_cast<uint32_t>(rank), *merged_id});
  }
  model.cache_ = new_cache();
  return model;
}

}  // namespace plumb::text

#include "text/tokenizer/tokenizer.hpp"

#include <fstream>
#include <sstream>

#include "text/tokenizer/added_vocabulary.hpp"
#include "text/tokenizer/bpe.hpp"
#include "text/tokenizer/decoder.hpp"
#include "text/tokenizer/normalizer.hpp"
#include "text/tokenizer/post_processor.hpp"
#include "text/tokenizer/pre_tokenizer.hpp"
#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

struct Tokenizer::Impl {
  BpeModel model;
  AddedVocabulary added;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
};

namespace {

Status require_null(const Json& root, std::string_view key, std::string_view where) {
  auto found = root.find(key);
  if (found == root.end() || found->is_null()) return {};
  return error_at(where, "field", key, "is not supported (encode would truncate or pad)", "null",
                  found->dump().substr(0, 80));
}

template <class T>
Status take(Result<T> parsed, T& into) {
  if (!parsed.ok()) return parsed.error();
  into = std::move(*parsed);
  return {};
}

Result<std::shared_ptr<const Tokenizer::Impl>> build(const Json& root, std::string_view where);

}  // namespace

Result<Tokenizer> Tokenizer::from_json(std::string_view json_text, std::string_view where) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& error) {
    return error_at(where, "file", where, "is not valid JSON", "a tokenizer.json document", error.what());
  }
  try {
    auto impl = build(root, where);
    if (!impl.ok()) return impl.error();
    Tokenizer tokenizer;
    tokenizer.impl_ = std::move(*impl);
    return tokenizer;
  } catch (const Json::exception& error) {
    // Every field is type-checked before use; this is the last guard against a malformed document.
    return error_at(where, "file", where, "has a malformed field", "the tokenizer.json schema", error.what());
  }
}

Result<Tokenizer> Tokenizer::load(const std::filesystem::path& path) {
  std::error_code error;
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(path, error)) file = path / "tokenizer.json";
  std::ifstream stream(file, std::ios::binary);
  if (!stream)
    return error_at("tokenizer", "file", file.string(), "cannot be opened", "a readable tokenizer.json",
                    "no file");
  std::ostringstream contents;
  contents << stream.rdbuf();
  return from_json(contents.str(), file.string());
}

namespace {

// Component parsing recurses through nested Sequences, so absurd nesting is refused before it starts.
Status check_depth(const Json& root, std::string_view where) {
  constexpr size_t kMaxDepth = 64;
  std::vector<std::pair<const Json*, size_t>> pending{{&root, 1}};
  while (!pending.empty()) {
    auto [node, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxDepth)
      return error_at(where, "document", "tokenizer.json", "is nested too deeply",
                      fmt::format("at most {} levels", kMaxDepth), "more");
    if (node->is_structured())
      for (const Json& child : *node)
        if (child.is_structured()) pending.emplace_back(&child, depth + 1);
  }
  return {};
}

Result<std::shared_ptr<const Tokenizer::Impl>> build(const Json& root, std::string_view where) {
  PLUMB_TRY(expect_object(root, where, "tokenizer.json"));
  PLUMB_TRY(check_depth(root, where));
  if (auto version = root.find("version"); version != root.end() && *version != "1.0")
    return error_at(where, "field", "version", "is not known", "\"1.0\"", version->dump());
  PLUMB_TRY(require_null(root, "truncation", where));
  PLUMB_TRY(require_null(root, "padding", where));
  auto impl = std::make_shared<Tokenizer::Impl>();
  auto model = root.find("model");
  if (model == root.end()) return error_at(where, "field", "model", "is missing", "a BPE model", "nothing");
  PLUMB_TRY(take(BpeModel::parse(*model, where), impl->model));
  const Json null_json;
  const auto field = [&](std::string_view key) -> const Json& {
    auto found = root.find(key);
    return found == root.end() ? null_json : *found;
  };
  PLUMB_TRY(take(parse_normalizer(field("normalizer"), where), impl->normalizer));
  PLUMB_TRY(take(parse_pre_tokenizer(field("pre_tokenizer"), where), impl->pre_tokenizer));
  PLUMB_TRY(take(parse_post_processor(field("post_processor"), where), impl->post_processor));
  PLUMB_TRY(take(parse_decoder(field("decoder"), where), impl->decoder));
  PLUMB_TRY(take(AddedVocabulary::parse(field("added_tokens"), impl->model, impl->normalizer.get(), where),
                 impl->added));
  return std::shared_ptr<const Tokenizer::Impl>(std::move(impl));
}

}  // namespace

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool add_special) const {
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
    return error_at("tokenizer", "text", "input", "is not valid UTF-8", "UTF-8",
                    fmt::format("a bad byte at {}", bad));
  if (text.size() >= (size_t{1} << 31))
    return error_at("tokenizer", "text", "input", "is too long", "under 2 GiB",
                    fmt::format("{} bytes", text.size()));
  thread_local PieceList pieces;
  pieces.reset(text);
  PLUMB_TRY(impl_->added.extract_and_normalize(pieces, impl_->normalizer.get()));
  if (impl_->pre_tokenizer) PLUMB_TRY(impl_->pre_tokenizer->pre_tokenize(pieces));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const Piece& piece : pieces.pieces) {
    if (piece.token >= 0) {
      ids.push_back(piece.token);
    } else {
      PLUMB_TRY(impl_->model.tokenize(pieces.text(piece), ids));
    }
  }
  if (add_special && impl_->post_processor) impl_->post_processor->add_special(ids);
  return ids;
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::optional<std::string_view> token = id_to_token(id);
    if (!token) continue;
    if (skip_special && impl_->added.is_special_content(*token)) continue;
    tokens.emplace_back(*token);
  }
  if (!impl_->decoder) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) joined += (i == 0 ? "" : " ") + tokens[i];
    return joined;
  }
  PLUMB_TRY(impl_->decoder->decode_chain(tokens));
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = impl_->added.token_to_id(token)) return id;
  return impl_->model.token_to_id(token);
}

std::optional<std::string_view> Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* added = impl_->added.token_of(id)) return std::string_view(added->content);
  if (const std::string* token = impl_->model.id_to_token(id)) return std::string_view(*token);
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  const std::optional<std::string_view> token = id_to_token(id);
  return token && impl_->added.is_special_content(*token);
}

size_t Tokenizer::vocab_size() const {
  return static_cast<size_t>(std::max<int64_t>(impl_->model.max_id(), impl_->added.max_id()) + 1);
}

ByteJoin Tokenizer::byte_join() const {
  return byte_join_of(impl_->decoder.get());
}

std::string Tokenizer::byte_level_bytes(int32_t id) const {
  std::string bytes;
  if (const std::optional<std::string_view> token = id_to_token(id)) append_byte_level_bytes(bytes, *token);
  return bytes;
}

bool Tokenizer::is_byte_token(int32_t id) const {
  const std::optional<std::string_view> token = id_to_token(id);
  return token && byte_fallback_value(*token) >= 0;
}

}  // namespace plumb::text

#include "server/reply_text.hpp"

#include <algorithm>

namespace plumb::server {

namespace {

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Gemma 4's tool-call markers and its string quote are special tokens the tool parser must see.
std::vector<int32_t> marker_ids(const text::Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  for (std::string_view marker : {kToolCallOpen, kToolCallClose, std::string_view("<|\"|>")})
    if (auto id = tokenizer.token_to_id(marker)) ids.push_back(*id);
  return ids;
}

}  // namespace

ReplyText::ReplyText(const text::Tokenizer& tokenizer, std::vector<int32_t> end_tokens,
                     std::vector<std::string> stops, bool parse_tools)
    : tokenizer_(tokenizer),
      decoder_(tokenizer, /*skip_special=*/true),
      end_tokens_(std::move(end_tokens)),
      marker_tokens_(parse_tools ? marker_ids(tokenizer) : std::vector<int32_t>()),
      stops_(std::move(stops)),
      parse_tools_(parse_tools) {}

std::string ReplyText::flush_decoder() {
  auto held = decoder_.finish();
  // Held text that cannot extend the emitted text consistently (see decode) is dropped.
  decoder_ = text::StreamDecoder(tokenizer_, /*skip_special=*/true);
  return held.ok() ? std::move(*held) : std::string();
}

Result<std::string> ReplyText::decode(std::span<const int32_t> tokens) {
  std::string text;
  for (int32_t id : tokens) {
    if (contains(end_tokens_, id)) continue;
    if (contains(marker_tokens_, id)) {
      text += flush_decoder();
      text += tokenizer_.id_to_token(id).value_or("");
      continue;
    }
    auto piece = decoder_.push(id);
    if (!piece.ok()) {
      // The detokenizer cannot keep what it already emitted (a decoder step that rewrites text across ids,
      // such as a Replace after Fuse): the text carries on from a fresh one, the same way for the same ids.
      decoder_ = text::StreamDecoder(tokenizer_, /*skip_special=*/true);
      piece = decoder_.push(id);
      if (!piece.ok()) return piece.error();
    }
    text += *piece;
  }
  return text;
}

ReplyText::Piece ReplyText::split(std::string text, bool last) {
  Piece piece;
  if (!parse_tools_) {
    piece.content = std::move(text);
    return piece;
  }
  auto part = splitter_.push(text);
  piece.content = std::move(part.content);
  piece.tool_calls = std::move(part.tool_calls);
  if (last) piece.content += splitter_.finish().content;
  return piece;
}

Result<ReplyText::Piece> ReplyText::push(std::span<const int32_t> tokens) {
  auto text = decode(tokens);
  if (!text.ok()) return text.error();
  return split(stops_.push(*text).text, false);
}

Result<ReplyText::Piece> ReplyText::finish() {
  std::string text = stops_.push(flush_decoder()).text;
  text += stops_.finish();
  return split(std::move(text), true);
}

}  // namespace plumb::server

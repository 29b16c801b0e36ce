// Streaming detokenization by decoding a short window: one id already emitted (so decoders that treat the
// first token specially, such as Metaspace or Strip, see it in the same place) plus the ids not yet final.
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::text {

namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

}  // namespace

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool skip_special)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

Result<std::string> StreamDecoder::push(int32_t id) {
  // decode drops unknown ids, and special ids when skipping them, before its decoders run, so a byte run on
  // either side is one run; in the window they would decode as a break that closes the run early.
  if (!tokenizer_.id_to_token(id) || (skip_special_ && tokenizer_.is_special(id))) return std::string();
  window_.push_back(id);
  // A byte token may still join later ones into one character, or make the whole run invalid.
  if (tokenizer_.is_byte_token(id)) return std::string();
  auto text = tokenizer_.decode(window_, skip_special_);
  if (!text.ok()) return text.error();
  // A trailing U+FFFD may be the start of a character whose remaining bytes are still to come.
  if (text->ends_with(kReplacementChar)) return std::string();
  if (!text->starts_with(window_text_))
    return error_at("stream decoder", "window", std::to_string(id), "rewrote text already emitted",
                    fmt::format("text starting '{}'", window_text_), *text);
  std::string piece = text->substr(window_text_.size());
  auto last = tokenizer_.decode(std::span<const int32_t>(&window_.back(), 1), skip_special_);
  if (!last.ok()) return last.error();
  // The newest id becomes the context unless it decodes to nothing (then it could not anchor a Strip
  // decoder).
  if (!last->empty()) {
    window_.assign(1, id);
    window_text_ = std::move(*last);
  } else {
    window_text_ = std::move(*text);
  }
  return piece;
}

Result<std::string> StreamDecoder::finish() {
  auto text = tokenizer_.decode(window_, skip_special_);
  if (!text.ok()) return text.error();
  std::string piece = text->starts_with(window_text_) ? text->substr(window_text_.size()) : std::string();
  if (!text->starts_with(window_text_))
    return error_at("stream decoder", "window", "finish", "rewrote text already emitted",
                    fmt::format("text starting '{}'", window_text_), *text);
  window_.clear();
  window_text_.clear();
  return piece;
}

}  // namespace plumb::text

// Streaming detokenization. ByteLevel alone decodes all bytes at once, so its stream splits the bytes
// themselves at the last unfinished character. Other decoders decode a short window: context ids already
// emitted (so decoders that treat the first token specially, such as Metaspace or Strip, see it in the same
// place) plus the ids not yet final.
#include "text/tokenizer/decoder.hpp"
#include "text/tokenizer/tokenizer.hpp"
#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

}  // namespace

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool skip_special)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special), join_(tokenizer_.byte_join()) {}

Result<std::string> StreamDecoder::push(int32_t id) {
  // decode drops unknown ids, and special ids when skipping them, before its decoders run, so a byte run on
  // either side is one run; in the window they would decode as a break that closes the run early.
  if (!tokenizer_.id_to_token(id) || (skip_special_ && tokenizer_.is_special(id))) return std::string();
  return join_ == ByteJoin::byte_level ? push_bytes(id) : push_window(id);
}

Result<std::string> StreamDecoder::push_bytes(int32_t id) {
  pending_ += tokenizer_.byte_level_bytes(id);
  // Invalid bytes become U+FFFD one maximal sequence at a time, so all but an unfinished last character is
  // final.
  const size_t unfinished = unfinished_utf8_start(pending_);
  std::string piece;
  append_utf8_lossy(piece, std::string_view(pending_).substr(0, unfinished));
  pending_.erase(0, unfinished);
  return piece;
}

bool StreamDecoder::holds_byte_run(int32_t id, size_t& failing_ids) {
  if (run_invalid_) return false;
  run_tail_.push_back(static_cast<char>(byte_fallback_value(*tokenizer_.id_to_token(id))));
  const size_t unfinished = unfinished_utf8_start(run_tail_);
  if (find_invalid_utf8(std::string_view(run_tail_).substr(0, unfinished)) == std::string_view::npos) {
    run_tail_.erase(0, unfinished);
    return true;
  }
  // The tail's bytes are invalid on their own and whatever follows them, so as the next context they keep
  // every later byte of this run U+FFFD, as decode of the whole run makes it.
  failing_ids = run_tail_.size();
  run_tail_.clear();
  run_invalid_ = true;
  return false;
}

Result<std::string> StreamDecoder::push_window(int32_t id) {
  window_.push_back(id);
  const bool byte = join_ != ByteJoin::none && tokenizer_.is_byte_token(id);
  size_t failing_ids = 0;
  if (join_ == ByteJoin::byte_runs && !byte) {
    run_tail_.clear();
    run_invalid_ = false;
  }
  if (join_ == ByteJoin::byte_runs && byte && holds_byte_run(id, failing_ids)) return std::string();
  // Mixed decoders are not modelled: a byte token may still join later ones, and a trailing U+FFFD may be
  // the start of a character whose remaining bytes are still to come.
  if (join_ == ByteJoin::mixed && byte) return std::string();
  auto text = tokenizer_.decode(window_, skip_special_);
  if (!text.ok()) return text.error();
  if (join_ == ByteJoin::mixed && text->ends_with(kReplacementChar)) return std::string();
  if (!text->starts_with(window_text_))
    return error_at("stream decoder", "window", std::to_string(id), "rewrote text already emitted",
                    fmt::format("text starting '{}'", window_text_), *text);
  std::string piece = text->substr(window_text_.size());
  if (run_invalid_ && failing_ids == 0) {
    window_.pop_back();  // a later byte of an invalid run: the failing ids stay the context
    return piece;
  }
  PLUMB_TRY(keep_context(std::move(*text), failing_ids > 0 ? failing_ids : 1));
  return piece;
}

Status StreamDecoder::keep_context(std::string window_text, size_t ids) {
  auto context = tokenizer_.decode(std::span<const int32_t>(window_).last(ids), skip_special_);
  if (!context.ok()) return context.error();
  // Context that decodes to nothing could not anchor a Strip decoder; the whole window stays instead.
  if (context->empty()) {
    window_text_ = std::move(window_text);
    return {};
  }
  window_.erase(window_.begin(), window_.end() - static_cast<std::ptrdiff_t>(ids));
  window_text_ = std::move(*context);
  return {};
}

Result<std::string> StreamDecoder::finish() {
  std::string piece;
  if (join_ == ByteJoin::byte_level) {
    append_utf8_lossy(piece, pending_);
    pending_.clear();
    return piece;
  }
  auto text = tokenizer_.decode(window_, skip_special_);
  if (!text.ok()) return text.error();
  if (!text->starts_with(window_text_))
    return error_at("stream decoder", "window", "finish", "rewrote text already emitted",
                    fmt::format("text starting '{}'", window_text_), *text);
  piece = text->substr(window_text_.size());
  window_.clear();
  window_text_.clear();
  run_tail_.clear();
  run_invalid_ = false;
  return piece;
}

}  // namespace plumb::text

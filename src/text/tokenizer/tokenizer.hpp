#pragma once
// A Hugging Face tokenizer.json, encoded and decoded exactly as the `tokenizers` library does.
//
//   auto tokenizer = plumb::text::Tokenizer::load("model_dir");        // or ".../tokenizer.json"
//   auto ids = tokenizer->encode("Hello", /*add_special=*/true);       // Result<std::vector<int32_t>>
//   auto text = tokenizer->decode(*ids);                               // Result<std::string>
//
// A Tokenizer is cheap to copy (shared, immutable state) and safe to use from several threads at once.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace plumb::text {

// How decode joins the bytes of neighbouring ids before it checks UTF-8, which decides the text a stream
// must hold back.
enum class ByteJoin : uint8_t {
  none,        // no ByteFallback or ByteLevel step: each token's text is whole
  byte_runs,   // ByteFallback: a run of "<0xXX>" tokens is its UTF-8 text, or one U+FFFD per byte if invalid
  byte_level,  // ByteLevel alone: the text is all the tokens' bytes with invalid sequences as U+FFFD
  mixed,       // ByteLevel beside other steps
};

class Tokenizer {
 public:
  // `path` is a tokenizer.json file or a directory holding one.
  static Result<Tokenizer> load(const std::filesystem::path& path);
  // Parses tokenizer.json text; `where` names it in error messages.
  static Result<Tokenizer> from_json(std::string_view json_text, std::string_view where = "tokenizer.json");

  // Token ids of `text` (valid UTF-8); `add_special` applies the post-processor (e.g. Gemma's <bos>).
  Result<std::vector<int32_t>> encode(std::string_view text, bool add_special = false) const;
  // Text of `ids`; ids the tokenizer does not know are skipped, as `tokenizers` skips them.
  Result<std::string> decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // Id of a token string (added tokens first, then the model vocabulary), e.g. "<start_of_turn>".
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token string of an id, before decoding (e.g. "▁Hello", "<0x0A>", "Ġworld").
  std::optional<std::string_view> id_to_token(int32_t id) const;
  // True for added tokens marked "special" (skipped by decode with skip_special).
  bool is_special(int32_t id) const;
  // One more than the largest id the tokenizer can produce.
  size_t vocab_size() const;
  // True for a "<0xXX>" token, which a ByteFallback decoder reads as one byte.
  bool is_byte_token(int32_t id) const;
  ByteJoin byte_join() const;
  // The bytes a ByteLevel step reads from the token of `id` (empty for an id the tokenizer does not know).
  std::string byte_level_bytes(int32_t id) const;

  struct Impl;  // defined in tokenizer.cpp

 private:
  Tokenizer() = default;  // only load() and from_json() make one, so impl_ is never null
  std::shared_ptr<const Impl> impl_;
};

// Streaming detokenizer: fed ids one at a time, it returns the text that is final so far. Pieces never split
// a UTF-8 sequence, and push(...)s followed by finish() concatenate to decode(all ids). With a ByteFallback
// or ByteLevel decoder, bytes are held back only while later ids could still make them valid UTF-8; once they
// cannot, their U+FFFD comes out at once.
class StreamDecoder {
 public:
  explicit StreamDecoder(Tokenizer tokenizer, bool skip_special = false);
  // Text made final by `id` (often empty while a character's bytes are still arriving).
  Result<std::string> push(int32_t id);
  // Whatever is still held back (e.g. an incomplete byte sequence, which decodes to U+FFFD); then starts
  // afresh.
  Result<std::string> finish();
  // Ids and bytes kept for the next push, which decodes no more than these and its id: at most four after a
  // push, unless a ByteFallback run that may still be valid UTF-8 is arriving, an id decodes to nothing, or
  // the decoder mixes ByteLevel with other steps.
  size_t kept() const { return window_.size() + pending_.size(); }

 private:
  Result<std::string> push_bytes(int32_t id);
  Result<std::string> push_window(int32_t id);
  // ByteFallback: whether the run that byte `id` extends may still be valid (then it is held back whole);
  // sets `failing_ids` when it has just become invalid.
  bool holds_byte_run(int32_t id, size_t& failing_ids);
  // Keeps the last `ids` of the window as the context of the next decode.
  Status keep_context(std::string window_text, size_t ids);

  Tokenizer tokenizer_;
  bool skip_special_;
  ByteJoin join_;
  std::vector<int32_t> window_;  // context ids already emitted, then the ids not yet final
  std::string window_text_;      // decode of the context ids
  std::string run_tail_;         // ByteFallback: the run's bytes since its last whole character
  bool run_invalid_ = false;     // ByteFallback: invalid whatever follows; its failing ids are the context
  std::string pending_;          // ByteLevel: bytes of a character not yet complete
};

}  // namespace plumb::text

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
  // True when decode of a lone id can stop mid-character (byte tokens); the stream holds those back.
  bool is_byte_token(int32_t id) const;

  struct Impl;  // defined in tokenizer.cpp

 private:
  Tokenizer() = default;  // only load() and from_json() make one, so impl_ is never null
  std::shared_ptr<const Impl> impl_;
};

// Streaming detokenizer: fed ids one at a time, it returns the text that is final so far. Pieces never split
// a UTF-8 sequence, and push(...)s followed by finish() concatenate to decode(all ids).
class StreamDecoder {
 public:
  explicit StreamDecoder(Tokenizer tokenizer, bool skip_special = false);
  // Text made final by `id` (often empty while a character's bytes are still arriving).
  Result<std::string> push(int32_t id);
  // Whatever is still held back (e.g. an incomplete byte sequence, which decodes to U+FFFD); then starts
  // afresh.
  Result<std::string> finish();

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::vector<int32_t> window_;  // one already-emitted context id, then the ids not yet final
  std::string window_text_;      // decode of window_ as far as already emitted
};

}  // namespace plumb::text

#pragma once
// UTF-8 walking and the Unicode predicates that Hugging Face `tokenizers` takes from Rust's `char`.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace plumb::text {

// Byte length of the sequence that starts with `lead` (1 for a stray continuation byte).
inline size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at `pos` of valid UTF-8 and moves `pos` past it.
inline char32_t next_code_point(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  const size_t length = utf8_sequence_length(lead);
  char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (byte(pos + i) & 0x3F);
  pos += length;
  return cp;
}

void append_utf8(std::string& out, char32_t cp);

// Offset of the first byte that breaks UTF-8 (overlongs, surrogates and values past U+10FFFF included), or
// npos.
size_t find_invalid_utf8(std::string_view text);

// Appends `bytes` to `out`, each maximal invalid subsequence replaced by U+FFFD (Rust's from_utf8_lossy).
void append_utf8_lossy(std::string& out, std::string_view bytes);

// Where a character that more bytes could still complete begins at the end of `bytes`; bytes.size() when
// none does.
size_t unfinished_utf8_start(std::string_view bytes);

bool is_white_space(char32_t cp);  // Unicode White_Space: Rust char::is_whitespace
bool is_numeric(char32_t cp);      // Nd, Nl, No: Rust char::is_numeric
bool is_punctuation(char32_t cp);  // ASCII punctuation or a P* category, as the Punctuation pre-tokenizer
bool is_regex_word(char32_t cp);   // Rust regex \w: Alphabetic, M, Nd, Pc, Join_Control

// Appends the full lowercase mapping of `cp` (Rust char::to_lowercase, no context rules).
void append_lowercase(std::string& out, char32_t cp);

}  // namespace plumb::text

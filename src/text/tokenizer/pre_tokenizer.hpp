#pragma once
// Pre-tokenizers of tokenizer.json: Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace,
// WhitespaceSplit, Punctuation.
#include <memory>
#include <string_view>

#include "core/error.hpp"
#include "text/tokenizer/json_fields.hpp"
#include "text/tokenizer/pieces.hpp"

namespace plumb::text {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual Status pre_tokenize(PieceList& pieces) const = 0;
};

// Builds the pre-tokenizer that `node` describes; null JSON gives nullptr; unknown types are refused by name.
Result<std::unique_ptr<PreTokenizer>> parse_pre_tokenizer(const Json& node, std::string_view where);

// The GPT-2 byte-to-character table that ByteLevel uses: byte b becomes code point byte_level_char(b).
char32_t byte_level_char(unsigned char byte);
// The byte that a ByteLevel character stands for, or -1.
int byte_level_byte(char32_t cp);

}  // namespace plumb::text

#pragma once
// Decoders of tokenizer.json: Sequence, Replace, ByteFallback, Fuse, Strip, ByteLevel, Metaspace.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "text/tokenizer/json_fields.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the token strings in place (`tokenizers`' decode_chain); the decoded text is their
  // concatenation.
  virtual Status decode_chain(std::vector<std::string>& tokens) const = 0;
  // Appends the type of each step, in order, a Sequence's steps in place of it ("Replace", "ByteFallback").
  virtual void list_steps(std::vector<std::string_view>& steps) const = 0;
};

// Builds the decoder that `node` describes; null JSON gives nullptr; unknown types are refused by name.
Result<std::unique_ptr<Decoder>> parse_decoder(const Json& node, std::string_view where);

// Parses "<0xXX>" (exactly six bytes, two hex digits) into its byte value, or -1.
int byte_fallback_value(std::string_view token);

// Appends the bytes a ByteLevel step reads from `token`: each character through the byte table, or the
// token's own UTF-8 when any character is outside the table.
void append_byte_level_bytes(std::string& out, std::string_view token);

// How the chain of `decoder` (null: none) joins bytes across tokens.
ByteJoin byte_join_of(const Decoder* decoder);

}  // namespace plumb::text

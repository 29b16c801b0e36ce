#pragma once
// Decoders of tokenizer.json: Sequence, Replace, ByteFallback, Fuse, Strip, ByteLevel, Metaspace.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "text/tokenizer/json_fields.hpp"

namespace plumb::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the token strings in place (`tokenizers`' decode_chain); the decoded text is their
  // concatenation.
  virtual Status decode_chain(std::vector<std::string>& tokens) const = 0;
};

// Builds the decoder that `node` describes; null JSON gives nullptr; unknown types are refused by name.
Result<std::unique_ptr<Decoder>> parse_decoder(const Json& node, std::string_view where);

// Parses "<0xXX>" (exactly six bytes, two hex digits) into its byte value, or -1.
int byte_fallback_value(std::string_view token);

}  // namespace plumb::text

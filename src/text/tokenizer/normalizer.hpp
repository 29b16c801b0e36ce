#pragma once
// Normalizers of tokenizer.json: Sequence, NFC, NFD, NFKC, NFKD, Replace, Prepend, Lowercase, Strip.
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "text/tokenizer/json_fields.hpp"

namespace plumb::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Writes the normalized form of `text` to `out` (cleared first).
  virtual Status normalize(std::string_view text, std::string& out) const = 0;
};

// Builds the normalizer that `node` describes; null JSON gives nullptr; unknown types are refused by name.
Result<std::unique_ptr<Normalizer>> parse_normalizer(const Json& node, std::string_view where);

}  // namespace plumb::text

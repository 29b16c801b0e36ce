#pragma once
// JSON in and out: request JSON becomes template values (key order kept), and the tojson filter writes JSON
// as Python's json.dumps does with Hugging Face's defaults (no key sorting, no ASCII escaping unless asked).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "text/template/value.hpp"

namespace plumb::text::jinja {

// Refuses integers outside int64 and nesting deeper than kMaxValueDepth.
Value from_json(const nlohmann::ordered_json& json);

struct JsonStyle {
  std::optional<std::string> indent;  // json.dumps(indent=...): None, a count of spaces, or a string
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::string> item_separator;  // defaults: ", " ("," when indenting)
  std::optional<std::string> key_separator;   // default ": "
};

std::string to_json(const Value& value, const JsonStyle& style, std::size_t max_bytes);

}  // namespace plumb::text::jinja

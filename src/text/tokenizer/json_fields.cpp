#include "text/tokenizer/json_fields.hpp"

#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

Result<char32_t> char_field(const Json& node, std::string_view key, std::string_view where) {
  auto text = string_field(node, key, where);
  if (!text.ok()) return text.error();
  const std::string& value = *text;
  size_t pos = 0;
  if (!value.empty() && find_invalid_utf8(value) == std::string_view::npos) {
    const char32_t cp = next_code_point(value, pos);
    if (pos == value.size()) return cp;
  }
  return error_at(where, "field", key, "is not a single character", "one character",
                  fmt::format("'{}'", value));
}

Result<Pattern> parse_pattern(const Json& node, std::string_view where) {
  if (node.is_object() && node.size() == 1) {
    if (node.contains("String") && node["String"].is_string())
      return Pattern::literal(node["String"].get<std::string>(), where);
    if (node.contains("Regex") && node["Regex"].is_string())
      return Pattern::regex(node["Regex"].get<std::string>(), where);
  }
  return error_at(where, "field", "pattern", "is not a pattern", "{\"String\": s} or {\"Regex\": r}",
                  node.dump().substr(0, 80));
}

}  // namespace plumb::text

#pragma once
// Typed reads of tokenizer.json fields: a missing or mistyped field is an error value naming it.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "text/tokenizer/regex.hpp"

namespace plumb::text {

using Json = nlohmann::json;

inline std::string_view json_type_name(const Json& value) {
  return value.type_name();
}

inline Status expect_object(const Json& node, std::string_view where, std::string_view object) {
  if (node.is_object()) return {};
  return error_at(where, object, "", "is not an object", "a JSON object", json_type_name(node));
}

// The "type" of a component object.
inline Result<std::string> component_type(const Json& node, std::string_view where, std::string_view object) {
  PLUMB_TRY(expect_object(node, where, object));
  auto found = node.find("type");
  if (found == node.end() || !found->is_string())
    return error_at(where, object, "type", "is missing or not a string", "a type name",
                    found == node.end() ? "nothing" : json_type_name(*found));
  return found->get<std::string>();
}

inline Result<std::string> string_field(const Json& node, std::string_view key, std::string_view where) {
  auto found = node.find(key);
  if (found == node.end() || !found->is_string())
    return error_at(where, "field", key, "is missing or not a string", "a string",
                    found == node.end() ? "nothing" : json_type_name(*found));
  return found->get<std::string>();
}

// A boolean field; `fallback` when absent or null.
inline Result<bool> bool_field(const Json& node, std::string_view key, bool fallback,
                               std::string_view where) {
  auto found = node.find(key);
  if (found == node.end() || found->is_null()) return fallback;
  if (!found->is_boolean())
    return error_at(where, "field", key, "is not a boolean", "true or false", found->dump());
  return found->get<bool>();
}

// A non-negative integer field no larger than `limit`; `fallback` when absent or null.
inline Result<int64_t> count_field(const Json& node, std::string_view key, int64_t fallback, int64_t limit,
                                   std::string_view where) {
  auto found = node.find(key);
  if (found == node.end() || found->is_null()) return fallback;
  if (!found->is_number_integer() || found->get<int64_t>() < 0 || found->get<int64_t>() > limit)
    return error_at(where, "field", key, "is not a valid count", fmt::format("an integer in [0, {}]", limit),
                    found->dump());
  return found->get<int64_t>();
}

// The single code point that a string field holds (Metaspace replacement, Strip content).
Result<char32_t> char_field(const Json& node, std::string_view key, std::string_view where);

// A "pattern" object: {"String": "..."} or {"Regex": "..."}.
Result<Pattern> parse_pattern(const Json& node, std::string_view where);

}  // namespace plumb::text

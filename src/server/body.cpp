#include "server/body.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <utf8proc.h>

namespace plumb::server {

namespace {

constexpr int kMaxNesting = 128;

// The deepest nesting of arrays and objects, read without parsing (strings skipped), so a hostile body cannot
// make any later recursive walk run out of stack.
int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

std::optional<size_t> invalid_utf8_offset(std::string_view text) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    utf8proc_int32_t codepoint = 0;
    const utf8proc_ssize_t length =
        utf8proc_iterate(bytes + offset, static_cast<utf8proc_ssize_t>(text.size() - offset), &codepoint);
    if (length <= 0) return offset;
    offset += static_cast<size_t>(length);
  }
  return std::nullopt;
}

Checked<json> parse_body(std::string_view body) {
  if (auto offset = invalid_utf8_offset(body))
    return ApiError{400, "invalid_request_error", "invalid_utf8", "",
                    fmt::format("request: body is not valid UTF-8; expected UTF-8 text, got byte 0x{:02x} at "
                                "offset {}",
                                static_cast<unsigned char>(body[*offset]), *offset)};
  if (const int depth = nesting_depth(body); depth > kMaxNesting)
    return ApiError{400, "invalid_request_error", "invalid_json", "",
                    fmt::format("request: body nests too deeply; expected at most {} levels, got {}",
                                kMaxNesting, depth)};
  json parsed;
  try {
    parsed = json::parse(body);
  } catch (const json::parse_error& error) {
    return ApiError{
        400, "invalid_request_error", "invalid_json", "",
        fmt::format("request: body is not valid JSON; expected a JSON object, got a syntax error at "
                    "byte {}",
                    error.byte)};
  }
  if (!parsed.is_object()) return wrong_type("body", "a JSON object", parsed);
  return parsed;
}

}  // namespace plumb::server

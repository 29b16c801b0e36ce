#pragma once
// The request body as JSON: checked to be UTF-8 and well-formed before any field is read.
#include <cstddef>
#include <optional>
#include <string_view>

#include "server/api_error.hpp"

namespace plumb::server {

// The offset of the first byte that does not belong to a valid UTF-8 sequence, if any.
std::optional<size_t> invalid_utf8_offset(std::string_view text);

// 400 invalid_utf8 for text that is not UTF-8, 400 invalid_json for a syntax error (with its byte offset),
// 400 for anything but an object.
Checked<json> parse_body(std::string_view body);

}  // namespace plumb::server

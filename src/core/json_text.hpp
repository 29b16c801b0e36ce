#pragma once
// Shared JSON reading for untrusted files (safetensors headers, index files, config.json): parse errors and
// type descriptions become parts of one-line messages.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace plumb {

// Parses `text`; a syntax error is "<where>: <object> '<name>' is not valid JSON; expected a JSON object, got
// a syntax error at byte N". When `duplicate_key` is given it receives the first key repeated in the
// top-level object.
Result<nlohmann::json> parse_json_text(std::string_view where, std::string_view object, std::string_view name,
                                       std::string_view text, std::string* duplicate_key = nullptr);

// Reads a whole file of at most `max_bytes`; errors name the file.
Result<std::string> read_text_file(const std::filesystem::path& path, uint64_t max_bytes);

// "an object", "an array", "a string", "an integer", "a number", "a boolean", "null".
std::string json_kind(const nlohmann::json& value);
// Compact, escaped and shortened JSON text for "got ..." parts of messages.
std::string json_excerpt(const nlohmann::json& value, size_t limit = 60);

}  // namespace plumb

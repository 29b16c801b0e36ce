#pragma once
// Typed reads of request fields. Absent and null fields give std::nullopt; a present field of the wrong type
// or out of range gives a 400 naming it, e.g. "request: field 'top_p' is out of range; expected 0 < top_p <=
// 1, got 7".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.hpp"

namespace plumb::server {

// The field's value, or nullptr when it is absent or null.
const json* field(const json& object, const std::string& name);

Checked<std::optional<bool>> optional_bool(const json& object, const std::string& name);
Checked<std::optional<std::string>> optional_string(const json& object, const std::string& name);
// A number in [low, high]; `range` describes the bounds for the message ("0 <= temperature <= 2").
Checked<std::optional<double>> optional_number(const json& object, const std::string& name, double low,
                                               double high, const std::string& range);
// An integer in [low, high] (a float with an integral value is accepted, as JSON does not tell them apart).
Checked<std::optional<int64_t>> optional_integer(const json& object, const std::string& name, int64_t low,
                                                 int64_t high, const std::string& range);
// A string or an array of at most `max_items` strings.
Checked<std::vector<std::string>> string_or_strings(const json& object, const std::string& name,
                                                    size_t max_items);

// 400 "request: field '<name>' is out of range; expected <range>, got <value>".
ApiError out_of_range(const std::string& name, const std::string& range, const json& got);

}  // namespace plumb::server

#include "models/gemma4/config_fields.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace plumb::gemma4 {

namespace {
std::string describe(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} {}", value.type_name(), text);
}
}  // namespace

Error FieldReader::wrong_type(std::string_view key, std::string_view expected) const {
  return error_at(where_, "field", name(key), "has the wrong type", expected,
                  describe(object_->at(std::string(key))));
}

std::vector<std::string> FieldReader::keys() const {
  std::vector<std::string> names;
  for (const auto& item : object_->items()) names.push_back(item.key());
  return names;
}

Result<int64_t> FieldReader::integer(std::string_view key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& value = object_->at(std::string(key));
  if (value.is_number_integer()) return value.get<int64_t>();
  // A float that holds an integer (some exporters write 1024.0) is accepted.
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (number == static_cast<double>(static_cast<int64_t>(number))) return static_cast<int64_t>(number);
  }
  return wrong_type(key, "an integer");
}

Result<int64_t> FieldReader::positive(std::string_view key, int64_t fallback) const {
  auto value = integer(key, fallback);
  if (!value.ok()) return value;
  if (*value <= 0)
    return error_at(where_, "field", name(key), "is out of range", "> 0", std::to_string(*value));
  return value;
}

Result<std::optional<int64_t>> FieldReader::optional_integer(std::string_view key) const {
  if (!has(key) || is_null(key)) return std::optional<int64_t>{};
  auto value = integer(key, 0);
  if (!value.ok()) return value.error();
  return std::optional<int64_t>{*value};
}

Result<double> FieldReader::number(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& value = object_->at(std::string(key));
  if (!value.is_number()) return wrong_type(key, "a number");
  return value.get<double>();
}

Result<std::optional<double>> FieldReader::optional_number(std::string_view key) const {
  if (!has(key) || is_null(key)) return std::optional<double>{};
  auto value = number(key, 0.0);
  if (!value.ok()) return value.error();
  return std::optional<double>{*value};
}

Result<bool> FieldReader::boolean(std::string_view key, bool fallback) const {
  if (!has(key) || is_null(key)) return fallback;
  const nlohmann::json& value = object_->at(std::string(key));
  if (!value.is_boolean()) return wrong_type(key, "true or false");
  return value.get<bool>();
}

Result<std::string> FieldReader::string(std::string_view key, std::string fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& value = object_->at(std::string(key));
  if (!value.is_string()) return wrong_type(key, "a string");
  return value.get<std::string>();
}

Result<std::optional<std::string>> FieldReader::optional_string(std::string_view key) const {
  if (!has(key) || is_null(key)) return std::optional<std::string>{};
  auto value = string(key, "");
  if (!value.ok()) return value.error();
  return std::optional<std::string>{*value};
}

Result<std::vector<std::string>> FieldReader::string_list(std::string_view key) const {
  const nlohmann::json& value = object_->at(std::string(key));
  if (!value.is_array()) return wrong_type(key, "a list of strings");
  std::vector<std::string> items;
  for (const nlohmann::json& item : value) {
    if (!item.is_string()) return wrong_type(key, "a list of strings");
    items.push_back(item.get<std::string>());
  }
  return items;
}

Result<std::vector<int64_t>> FieldReader::integer_list_or_one(std::string_view key,
                                                              std::vector<int64_t> fallback) const {
  if (!has(key) || is_null(key)) return fallback;
  const nlohmann::json& value = object_->at(std::string(key));
  if (value.is_number_integer()) return std::vector<int64_t>{value.get<int64_t>()};
  if (!value.is_array()) return wrong_type(key, "an integer or a list of integers");
  std::vector<int64_t> items;
  for (const nlohmann::json& item : value) {
    if (!item.is_number_integer()) return wrong_type(key, "an integer or a list of integers");
    items.push_back(item.get<int64_t>());
  }
  return items;
}

Result<FieldReader> FieldReader::object(std::string_view key) const {
  if (!has(key)) return error_at(where_, "field", name(key), "is missing", "an object", "nothing");
  const nlohmann::json& value = object_->at(std::string(key));
  if (!value.is_object()) return wrong_type(key, "an object");
  return FieldReader(value, where_, name(key) + ".");
}

Status FieldReader::only_keys(std::initializer_list<std::string_view> allowed) const {
  for (const auto& item : object_->items())
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
      return error_at(where_, "field", name(item.key()), "is not supported here",
                      fmt::format("only {}", fmt::join(allowed, ", ")), describe(item.value()));
  return {};
}

Result<int64_t> parse_layer_index(std::string_view where, const std::string& key, int64_t layer_count) {
  int64_t index = -1;
  const auto [end, problem] = std::from_chars(key.data(), key.data() + key.size(), index);
  if (problem != std::errc() || end != key.data() + key.size() || index < 0 || index >= layer_count)
    return error_at(where, "per_layer_config key", key, "is not a layer index",
                    fmt::format("0 .. {}", layer_count - 1), key);
  return index;
}

}  // namespace plumb::gemma4

#include "core/config.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include "core/json_text.hpp"
#include "core/printable.hpp"

namespace plumb {

using Json = nlohmann::json;

namespace {
constexpr std::string_view kInteger = "an integer";

// 2^63: the first double above every int64.
constexpr double kInt64End = 9223372036854775808.0;

bool is_int64(const Json& value) {
  if (value.is_number_float()) {
    const double number = value.get<double>();
    return number == std::trunc(number) && number >= -kInt64End && number < kInt64End;
  }
  return value.is_number_integer() &&
         (!value.is_number_unsigned() ||
          value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

int64_t as_int64(const Json& value) {
  return value.is_number_float() ? static_cast<int64_t>(value.get<double>()) : value.get<int64_t>();
}

// The items of a JSON array of integers, or nothing when one item is not an integer.
std::optional<std::vector<int64_t>> int64_items(const Json& array) {
  std::vector<int64_t> items;
  for (const Json& item : array) {
    if (!is_int64(item)) return std::nullopt;
    items.push_back(as_int64(item));
  }
  return items;
}
}  // namespace

Config::Config(std::shared_ptr<const Json> root, const Json* node, std::string where, std::string prefix)
    : root_(std::move(root)), node_(node), where_(std::move(where)), prefix_(std::move(prefix)) {}

Result<Config> Config::load(const std::filesystem::path& path) {
  auto text = read_text_file(path, kMaxBytes);
  if (!text) return text.error();
  return parse(printable(path.string(), 400), *text);
}

Result<Config> Config::parse(std::string where, std::string_view text) {
  auto parsed = parse_json_text(where, "config", "json", text);
  if (!parsed) return parsed.error();
  return from_json(std::move(where), std::move(*parsed));
}

Result<Config> Config::from_json(std::string where, Json document) {
  if (!document.is_object())
    return error_at(where, "config", "json", "is not an object", "a JSON object", json_kind(document));
  auto root = std::make_shared<const Json>(std::move(document));
  const Json* node = root.get();
  return Config(std::move(root), node, std::move(where), "");
}

bool Config::has(std::string_view field) const {
  auto found = node_->find(field);
  return found != node_->end() && !found->is_null();
}

bool Config::has_object(std::string_view field) const {
  auto found = node_->find(field);
  return found != node_->end() && found->is_object();
}

std::string Config::field_name(std::string_view field) const {
  return printable(fmt::format("{}{}", prefix_, field));
}

Result<const Json*> Config::field_value(std::string_view field, std::string_view expected) const {
  auto found = node_->find(field);
  if (found == node_->end())
    return error_at(where_, "field", field_name(field), "is missing", expected, "nothing");
  return &*found;
}

Error Config::wrong_type(std::string_view field, std::string_view expected, const Json& got) const {
  std::string described = json_kind(got);
  if (!got.is_object() && !got.is_null()) described = fmt::format("{} {}", described, json_excerpt(got, 40));
  return error_at(where_, "field", field_name(field), "has the wrong type", expected, described);
}

Result<Config> Config::sub(std::string_view field) const {
  auto value = field_value(field, "an object");
  if (!value) return value.error();
  if (!(*value)->is_object()) return wrong_type(field, "an object", **value);
  return Config(root_, *value, where_, fmt::format("{}{}.", prefix_, field));
}

Result<int64_t> Config::integer(std::string_view field) const {
  auto value = field_value(field, kInteger);
  if (!value) return value.error();
  if (!is_int64(**value)) return wrong_type(field, kInteger, **value);
  return as_int64(**value);
}

Result<int64_t> Config::integer_or(std::string_view field, int64_t fallback) const {
  return has(field) ? integer(field) : Result<int64_t>(fallback);
}

Result<double> Config::number(std::string_view field) const {
  auto value = field_value(field, "a number");
  if (!value) return value.error();
  if (!(*value)->is_number()) return wrong_type(field, "a number", **value);
  return (*value)->get<double>();
}

Result<double> Config::number_or(std::string_view field, double fallback) const {
  return has(field) ? number(field) : Result<double>(fallback);
}

Result<bool> Config::boolean(std::string_view field) const {
  auto value = field_value(field, "a boolean");
  if (!value) return value.error();
  if (!(*value)->is_boolean()) return wrong_type(field, "a boolean", **value);
  return (*value)->get<bool>();
}

Result<bool> Config::boolean_or(std::string_view field, bool fallback) const {
  return has(field) ? boolean(field) : Result<bool>(fallback);
}

Result<std::string> Config::string(std::string_view field) const {
  auto value = field_value(field, "a string");
  if (!value) return value.error();
  if (!(*value)->is_string()) return wrong_type(field, "a string", **value);
  return (*value)->get<std::string>();
}

Result<std::string> Config::string_or(std::string_view field, std::string fallback) const {
  return has(field) ? string(field) : Result<std::string>(std::move(fallback));
}

Result<std::vector<int64_t>> Config::integers(std::string_view field) const {
  constexpr std::string_view kExpected = "an array of integers";
  auto value = field_value(field, kExpected);
  if (!value) return value.error();
  auto items = (*value)->is_array() ? int64_items(**value) : std::nullopt;
  if (!items) return wrong_type(field, kExpected, **value);
  return std::move(*items);
}

Result<std::vector<int64_t>> Config::integer_or_integers(std::string_view field) const {
  constexpr std::string_view kExpected = "an integer or an array of integers";
  auto value = field_value(field, kExpected);
  if (!value) return value.error();
  if (is_int64(**value)) return std::vector<int64_t>{as_int64(**value)};
  auto items = (*value)->is_array() ? int64_items(**value) : std::nullopt;
  if (!items) return wrong_type(field, kExpected, **value);
  return std::move(*items);
}

Result<std::vector<std::string>> Config::strings(std::string_view field) const {
  constexpr std::string_view kExpected = "an array of strings";
  auto value = field_value(field, kExpected);
  if (!value) return value.error();
  if (!(*value)->is_array()) return wrong_type(field, kExpected, **value);
  std::vector<std::string> items;
  for (const Json& item : **value) {
    if (!item.is_string()) return wrong_type(field, kExpected, **value);
    items.push_back(item.get<std::string>());
  }
  return items;
}

}  // namespace plumb

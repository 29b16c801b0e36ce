#include "server/json_fields.hpp"

#include <cmath>

#include <fmt/format.h>

namespace plumb::server {

namespace {

std::string short_dump(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

}  // namespace

ApiError out_of_range(const std::string& name, const std::string& range, const json& got) {
  return invalid_field(name, fmt::format("request: field '{}' is out of range; expected {}, got {}", name,
                                         range, short_dump(got)));
}

const json* field(const json& object, const std::string& name) {
  auto found = object.find(name);
  if (found == object.end() || found->is_null()) return nullptr;
  return &*found;
}

Checked<std::optional<bool>> optional_bool(const json& object, const std::string& name) {
  const json* value = field(object, name);
  if (!value) return std::optional<bool>();
  if (!value->is_boolean()) return wrong_type(name, "a boolean", *value);
  return std::optional<bool>(value->get<bool>());
}

Checked<std::optional<std::string>> optional_string(const json& object, const std::string& name) {
  const json* value = field(object, name);
  if (!value) return std::optional<std::string>();
  if (!value->is_string()) return wrong_type(name, "a string", *value);
  return std::optional<std::string>(value->get<std::string>());
}

Checked<std::optional<double>> optional_number(const json& object, const std::string& name, double low,
                                               double high, const std::string& range) {
  const json* value = field(object, name);
  if (!value) return std::optional<double>();
  if (!value->is_number()) return wrong_type(name, "a number", *value);
  const double number = value->get<double>();
  if (!std::isfinite(number) || number < low || number > high) return out_of_range(name, range, *value);
  return std::optional<double>(number);
}

Checked<std::optional<int64_t>> optional_integer(const json& object, const std::string& name, int64_t low,
                                                 int64_t high, const std::string& range) {
  const json* value = field(object, name);
  if (!value) return std::optional<int64_t>();
  if (!value->is_number()) return wrong_type(name, "an integer", *value);
  if (value->is_number_unsigned()) {
    const uint64_t number = value->get<uint64_t>();
    if (number > static_cast<uint64_t>(high)) return out_of_range(name, range, *value);
    return std::optional<int64_t>(static_cast<int64_t>(number));
  }
  if (value->is_number_float()) {
    const double number = value->get<double>();
    if (!std::isfinite(number) || std::floor(number) != number) return wrong_type(name, "an integer", *value);
    if (number < static_cast<double>(low) || number > static_cast<double>(high))
      return out_of_range(name, range, *value);
    return std::optional<int64_t>(static_cast<int64_t>(number));
  }
  const int64_t number = value->get<int64_t>();
  if (number < low || number > high) return out_of_range(name, range, *value);
  return std::optional<int64_t>(number);
}

Checked<std::vector<std::string>> string_or_strings(const json& object, const std::string& name,
                                                    size_t max_items) {
  const json* value = field(object, name);
  std::vector<std::string> items;
  if (!value) return items;
  if (value->is_string()) {
    items.push_back(value->get<std::string>());
  } else if (value->is_array()) {
    for (const json& item : *value) {
      if (!item.is_string()) return wrong_type(name, "a string or an array of strings", *value);
      items.push_back(item.get<std::string>());
    }
  } else {
    return wrong_type(name, "a string or an array of strings", *value);
  }
  if (items.size() > max_items)
    return out_of_range(name, fmt::format("at most {} items", max_items), json(items.size()));
  for (const std::string& item : items)
    if (item.empty()) return out_of_range(name, "non-empty strings", *value);
  return items;
}

}  // namespace plumb::server

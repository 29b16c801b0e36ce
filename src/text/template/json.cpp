#include "text/template/json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {

Value from_json_at(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxValueDepth)
    fail("JSON input is nested too deeply; expected at most " + std::to_string(kMaxValueDepth) + " levels");
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(json.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto number = json.get<std::uint64_t>();
      if (number > static_cast<std::uint64_t>(INT64_MAX))
        fail("JSON integer " + std::to_string(number) +
             " is too large; expected at most 9223372036854775807");
      return Value::integer(static_cast<std::int64_t>(number));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(json.get<double>());
    case nlohmann::ordered_json::value_t::string: {
      const auto& text = json.get_ref<const std::string&>();
      if (!py::valid_utf8(text)) fail("JSON string is not valid UTF-8");
      return Value::string(text);
    }
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json_at(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      MapData map;
      for (const auto& [key, item] : json.items()) map.set(key, from_json_at(item, depth + 1));
      return Value::map(std::move(map));
    }
    default:
      fail("JSON value of type '" + std::string(json.type_name()) + "' cannot be used in a template");
  }
}

class Writer {
 public:
  Writer(const JsonStyle& style, std::size_t max_bytes) : style_(style), max_bytes_(max_bytes) {
    item_separator_ = style.item_separator.value_or(style.indent ? "," : ", ");
    key_separator_ = style.key_separator.value_or(": ");
  }

  void write(const Value& value, int level) {
    if (out_.size() > max_bytes_)
      fail("tojson output is larger than the limit; expected at most " + std::to_string(max_bytes_) +
           " bytes");
    if (level > 2 * kMaxValueDepth) fail("value is nested too deeply for tojson");
    switch (value.kind()) {
      case Kind::None:
        out_ += "null";
        return;
      case Kind::Bool:
        out_ += value.as_bool() ? "true" : "false";
        return;
      case Kind::Int:
        out_ += std::to_string(value.as_int());
        return;
      case Kind::Float:
        write_float(value.as_float());
        return;
      case Kind::String:
        write_string(value.as_string());
        return;
      case Kind::List:
        write_list(value.items(), level);
        return;
      case Kind::Map:
        write_map(value.entries(), level);
        return;
      default:
        fail("object of type '" + type_name(value) + "' is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  const JsonStyle& style_;
  std::size_t max_bytes_;
  std::string item_separator_;
  std::string key_separator_;
  std::string out_;

  void newline(int level) {
    if (!style_.indent) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *style_.indent;
  }

  void write_float(double number) {
    if (std::isnan(number))
      out_ += "NaN";
    else if (std::isinf(number))
      out_ += number > 0 ? "Infinity" : "-Infinity";
    else
      out_ += py::float_repr(number);
  }

  void write_escape(char32_t code_point) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(code_point));
    out_ += buffer;
  }

  void write_string(const std::string& text) {
    out_ += '"';
    for (char32_t c : py::decode(text)) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          continue;
        case '\\':
          out_ += "\\\\";
          continue;
        case '\n':
          out_ += "\\n";
          continue;
        case '\r':
          out_ += "\\r";
          continue;
        case '\t':
          out_ += "\\t";
          continue;
        case '\b':
          out_ += "\\b";
          continue;
        case '\f':
          out_ += "\\f";
          continue;
        default:
          break;
      }
      if (c < 0x20 || (style_.ensure_ascii && c >= 0x7F)) {
        if (c > 0xFFFF) {
          const char32_t offset = c - 0x10000;
          write_escape(0xD800 + (offset >> 10));
          write_escape(0xDC00 + (offset & 0x3FF));
        } else {
          write_escape(c);
        }
        continue;
      }
      py::append_utf8(out_, c);
    }
    out_ += '"';
  }

  void write_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += item_separator_;
      newline(level + 1);
      write(items[i], level + 1);
    }
    newline(level);
    out_ += ']';
  }

  void write_map(const MapData& map, int level) {
    if (map.size() == 0) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> entries;
    for (const auto& entry : map.items()) entries.push_back(&entry);
    if (style_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out_ += '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i) out_ += item_separator_;
      newline(level + 1);
      write_string(entries[i]->first);
      out_ += key_separator_;
      write(entries[i]->second, level + 1);
    }
    newline(level);
    out_ += '}';
  }
};

}  // namespace

Value from_json(const nlohmann::ordered_json& json) {
  return from_json_at(json, 0);
}

std::string to_json(const Value& value, const JsonStyle& style, std::size_t max_bytes) {
  Writer writer(style, max_bytes);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace plumb::text::jinja

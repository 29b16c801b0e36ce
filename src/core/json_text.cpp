#include "core/json_text.hpp"

#include <set>

#include "core/mapped_file.hpp"
#include "core/printable.hpp"

namespace plumb {

using nlohmann::json;

Result<json> parse_json_text(std::string_view where, std::string_view object, std::string_view name,
                             std::string_view text, std::string* duplicate_key) {
  std::set<std::string, std::less<>> top_keys;
  auto watch_keys = [&](int depth, json::parse_event_t event, json& parsed) {
    if (duplicate_key != nullptr && depth == 1 && event == json::parse_event_t::key &&
        duplicate_key->empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!top_keys.insert(key).second) *duplicate_key = key;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), watch_keys);
  } catch (const json::parse_error& error) {
    return error_at(where, object, name, "is not valid JSON", "a JSON object",
                    fmt::format("a syntax error at byte {}", error.byte));
  } catch (const json::exception& error) {
    return error_at(where, object, name, "is not valid JSON", "a JSON object", printable(error.what()));
  }
}

Result<std::string> read_text_file(const std::filesystem::path& path, uint64_t max_bytes) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  std::span<const std::byte> bytes = mapped->bytes();
  if (bytes.size() > max_bytes)
    return error_at(printable(path.string(), 400), "file", printable(path.filename().string()),
                    "is too large", fmt::format("at most {} bytes", max_bytes),
                    fmt::format("{} bytes", bytes.size()));
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string json_kind(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "an unusual value";
  }
}

std::string json_excerpt(const json& value, size_t limit) {
  return printable(value.dump(-1, ' ', false, json::error_handler_t::replace), limit);
}

}  // namespace plumb

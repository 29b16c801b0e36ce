#include "core/json_text.hpp"

#include <set>

#include "core/mapped_file.hpp"
#include "core/printable.hpp"

namespace plumb {

using nlohmann::json;

namespace {

// A SAX pass that only notes the first key repeated in the top-level object; nlohmann's callback parser would
// do the same job in time that grows much faster than the header.
class TopLevelDuplicates : public nlohmann::json_sax<json> {
 public:
  std::string first_repeated;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
  bool key(string_t& key) override {
    if (depth_ == 1 && first_repeated.empty() && !keys_.insert(key).second) first_repeated = key;
    return true;
  }

 private:
  int depth_ = 0;
  std::set<std::string> keys_;
};

}  // namespace

Result<json> parse_json_text(std::string_view where, std::string_view object, std::string_view name,
                             std::string_view text, std::string* duplicate_key) {
  json parsed;
  try {
    parsed = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& error) {
    return error_at(where, object, name, "is not valid JSON", "a JSON object",
                    fmt::format("a syntax error at byte {}", error.byte));
  } catch (const json::exception& error) {
    return error_at(where, object, name, "is not valid JSON", "a JSON object", printable(error.what()));
  }
  if (duplicate_key != nullptr && parsed.is_object()) {
    TopLevelDuplicates watcher;
    json::sax_parse(text.begin(), text.end(), &watcher);
    *duplicate_key = watcher.first_repeated;
  }
  return parsed;
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

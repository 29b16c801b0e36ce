#include "server/tool_calls.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace plumb::server {

namespace {

using json = nlohmann::ordered_json;
constexpr std::string_view kQuote = "<|\"|>";
constexpr int kMaxDepth = 64;

// A recursive-descent reader over a call's argument text; every method returns false on malformed input.
class ArgumentReader {
 public:
  explicit ArgumentReader(std::string_view text) : text_(text) {}

  bool object(json& out, int depth) {
    if (depth > kMaxDepth || !take('{')) return false;
    out = json::object();
    skip_space();
    if (take('}')) return true;
    while (true) {
      std::string key;
      json value;
      if (!read_key(key) || !take(':') || !read_value(value, depth + 1)) return false;
      out[key] = std::move(value);
      skip_space();
      if (take('}')) return true;
      if (!take(',')) return false;
    }
  }

  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

 private:
  bool read_value(json& out, int depth) {
    skip_space();
    if (starts_with(kQuote)) return read_string(out);
    if (peek() == '{') return object(out, depth);
    if (peek() == '[') return array(out, depth);
    return read_scalar(out);
  }

  bool array(json& out, int depth) {
    if (depth > kMaxDepth || !take('[')) return false;
    out = json::array();
    skip_space();
    if (take(']')) return true;
    while (true) {
      json value;
      if (!read_value(value, depth + 1)) return false;
      out.push_back(std::move(value));
      skip_space();
      if (take(']')) return true;
      if (!take(',')) return false;
    }
  }

  bool read_string(json& out) {
    pos_ += kQuote.size();
    const size_t end = text_.find(kQuote, pos_);
    if (end == std::string_view::npos) return false;
    out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + kQuote.size();
    return true;
  }

  // Numbers, booleans and null as JSON (or Python) spells them; any other bare word is kept as a string.
  bool read_scalar(json& out) {
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ']') ++pos_;
    std::string word(text_.substr(start, pos_ - start));
    while (!word.empty() && std::isspace(static_cast<unsigned char>(word.back()))) word.pop_back();
    if (word.empty()) return false;
    if (word == "true" || word == "True") return out = true, true;
    if (word == "false" || word == "False") return out = false, true;
    if (word == "null" || word == "None") return out = nullptr, true;
    json number = json::parse(word, nullptr, false);
    out = number.is_number() ? number : json(word);
    return true;
  }

  bool read_key(std::string& key) {
    skip_space();
    if (starts_with(kQuote)) {
      json text;
      if (!read_string(text)) return false;
      key = text.get<std::string>();
      return true;
    }
    const size_t end = text_.find(':', pos_);
    if (end == std::string_view::npos || end == pos_) return false;
    key = std::string(text_.substr(pos_, end - pos_));
    pos_ = end;
    return key.find_first_of("{}[],") == std::string::npos;
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool take(char expected) {
    skip_space();
    if (peek() != expected) return false;
    ++pos_;
    return true;
  }
  bool starts_with(std::string_view prefix) const { return text_.substr(pos_).starts_with(prefix); }

  std::string_view text_;
  size_t pos_ = 0;
};

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  });
}

}  // namespace

std::optional<ToolCall> parse_tool_call(std::string_view body) {
  constexpr std::string_view kCall = "call:";
  if (!body.starts_with(kCall)) return std::nullopt;
  body.remove_prefix(kCall.size());
  const size_t brace = body.find('{');
  if (brace == std::string_view::npos) return std::nullopt;
  std::string_view name = body.substr(0, brace);
  if (!valid_name(name)) return std::nullopt;
  ArgumentReader reader(body.substr(brace));
  json arguments;
  if (!reader.object(arguments, 0) || !reader.at_end()) return std::nullopt;
  return ToolCall{std::string(name), arguments.dump(-1, ' ', false, json::error_handler_t::replace)};
}

size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  const size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t length = longest; length > 0; --length)
    if (text.substr(text.size() - length) == marker.substr(0, length)) return length;
  return 0;
}

ToolCallSplitter::Piece ToolCallSplitter::push(std::string_view text) {
  held_.append(text);
  Piece piece;
  while (true) {
    if (!in_call_) {
      const size_t open = held_.find(kToolCallOpen);
      if (open == std::string::npos) {
        const size_t keep = partial_marker_suffix(held_, kToolCallOpen);
        piece.content += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return piece;
      }
      piece.content += held_.substr(0, open);
      held_.erase(0, open);
      in_call_ = true;
    }
    const size_t close = held_.find(kToolCallClose);
    if (close == std::string::npos) return piece;
    const std::string_view body =
        std::string_view(held_).substr(kToolCallOpen.size(), close - kToolCallOpen.size());
    if (auto call = parse_tool_call(body)) {
      piece.tool_calls.push_back(std::move(*call));
    } else {
      piece.content += held_.substr(0, close + kToolCallClose.size());
    }
    held_.erase(0, close + kToolCallClose.size());
    in_call_ = false;
  }
}

ToolCallSplitter::Piece ToolCallSplitter::finish() {
  Piece piece;
  piece.content = std::move(held_);
  held_.clear();
  in_call_ = false;
  return piece;
}

}  // namespace plumb::server

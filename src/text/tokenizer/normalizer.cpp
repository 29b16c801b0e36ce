#include "text/tokenizer/normalizer.hpp"

#include <cstdlib>
#include <vector>

#include <utf8proc.h>

#include "text/tokenizer/regex.hpp"
#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

namespace {

bool is_ascii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(int options) : options_(static_cast<utf8proc_option_t>(options)) {}
  Status normalize(std::string_view text, std::string& out) const override {
    out.clear();
    // ASCII text is its own normal form in all four forms.
    if (is_ascii(text)) {
      out.assign(text);
      return {};
    }
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t length =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                     static_cast<utf8proc_ssize_t>(text.size()), &mapped, options_);
    if (length < 0) {
      return error_at("normalizer", "text", "input", "cannot be normalized", "valid UTF-8",
                      utf8proc_errmsg(length));
    }
    out.assign(reinterpret_cast<const char*>(mapped), static_cast<size_t>(length));
    std::free(mapped);
    return {};
  }

 private:
  utf8proc_option_t options_;
};

class Replace final : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status normalize(std::string_view text, std::string& out) const override {
    out.clear();
    thread_local std::vector<Span> spans;
    PLUMB_TRY(pattern_.cover(text, spans));
    for (const Span& span : spans) {
      if (span.is_match) {
        out += content_;
      } else {
        out.append(text.substr(span.begin, span.end - span.begin));
      }
    }
    return {};
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  Status normalize(std::string_view text, std::string& out) const override {
    out.clear();
    if (text.empty()) return {};
    out.reserve(prefix_.size() + text.size());
    out += prefix_;
    out += text;
    return {};
  }

 private:
  std::string prefix_;
};

class Lowercase final : public Normalizer {
 public:
  Status normalize(std::string_view text, std::string& out) const override {
    out.clear();
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
      const unsigned char byte = static_cast<unsigned char>(text[pos]);
      if (byte < 0x80) {
        out.push_back(static_cast<char>(byte >= 'A' && byte <= 'Z' ? byte + 32 : byte));
        ++pos;
      } else {
        append_lowercase(out, next_code_point(text, pos));
      }
    }
    return {};
  }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  Status normalize(std::string_view text, std::string& out) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      size_t pos = 0;
      while (pos < text.size() && is_white_space(next_code_point(text, pos))) begin = pos;
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t pos = start;
        if (!is_white_space(next_code_point(text, pos))) break;
        end = start;
      }
    }
    out.assign(text.substr(begin, end - begin));
    return {};
  }

 private:
  bool left_, right_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  Status normalize(std::string_view text, std::string& out) const override {
    std::string current(text), next;
    for (const auto& step : steps_) {
      PLUMB_TRY(step->normalize(current, next));
      current.swap(next);
    }
    out = std::move(current);
    return {};
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

Result<std::unique_ptr<Normalizer>> parse_sequence(const Json& node, std::string_view where) {
  auto list = node.find("normalizers");
  if (list == node.end() || !list->is_array())
    return error_at(where, "field", "normalizers", "is missing or not a list", "a list of normalizers",
                    "other");
  std::vector<std::unique_ptr<Normalizer>> steps;
  for (const Json& item : *list) {
    auto step = parse_normalizer(item, where);
    if (!step.ok()) return step.error();
    if (*step) steps.push_back(std::move(*step));
  }
  return std::unique_ptr<Normalizer>(std::make_unique<Sequence>(std::move(steps)));
}

}  // namespace

Result<std::unique_ptr<Normalizer>> parse_normalizer(const Json& node, std::string_view where) {
  if (node.is_null()) return std::unique_ptr<Normalizer>();
  auto type = component_type(node, where, "normalizer");
  if (!type.ok()) return type.error();
  const std::string& name = *type;
  if (name == "Sequence") return parse_sequence(node, where);
  if (name == "NFC")
    return std::unique_ptr<Normalizer>(std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (name == "NFD")
    return std::unique_ptr<Normalizer>(std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  if (name == "NFKC")
    return std::unique_ptr<Normalizer>(
        std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (name == "NFKD")
    return std::unique_ptr<Normalizer>(
        std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  if (name == "Lowercase") return std::unique_ptr<Normalizer>(std::make_unique<Lowercase>());
  if (name == "Replace") {
    auto pattern = parse_pattern(node.value("pattern", Json()), where);
    if (!pattern.ok()) return pattern.error();
    auto content = string_field(node, "content", where);
    if (!content.ok()) return content.error();
    return std::unique_ptr<Normalizer>(std::make_unique<Replace>(std::move(*pattern), std::move(*content)));
  }
  if (name == "Prepend") {
    auto prefix = string_field(node, "prepend", where);
    if (!prefix.ok()) return prefix.error();
    return std::unique_ptr<Normalizer>(std::make_unique<Prepend>(std::move(*prefix)));
  }
  if (name == "Strip") {
    auto left = bool_field(node, "strip_left", true, where);
    auto right = bool_field(node, "strip_right", true, where);
    if (!left.ok()) return left.error();
    if (!right.ok()) return right.error();
    return std::unique_ptr<Normalizer>(std::make_unique<Strip>(*left, *right));
  }
  return error_at(where, "normalizer", name, "is not supported",
                  "Sequence, NFC, NFD, NFKC, NFKD, Replace, Prepend, Lowercase or Strip", name);
}

}  // namespace plumb::text

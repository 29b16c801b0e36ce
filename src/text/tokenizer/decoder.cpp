#include "text/tokenizer/decoder.hpp"

#include <algorithm>

#include "text/tokenizer/pre_tokenizer.hpp"
#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

int byte_fallback_value(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return -1;
  int value = 0;
  for (char c : token.substr(3, 2)) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

void append_byte_level_bytes(std::string& out, std::string_view token) {
  const size_t start = out.size();
  for (size_t pos = 0; pos < token.size();) {
    const int byte = byte_level_byte(next_code_point(token, pos));
    if (byte < 0) {
      out.resize(start);
      out.append(token);
      return;
    }
    out.push_back(static_cast<char>(byte));
  }
}

ByteJoin byte_join_of(const Decoder* decoder) {
  std::vector<std::string_view> steps;
  if (decoder) decoder->list_steps(steps);
  const auto has = [&](std::string_view type) {
    return std::find(steps.begin(), steps.end(), type) != steps.end();
  };
  if (has("ByteLevel")) return steps.size() == 1 ? ByteJoin::byte_level : ByteJoin::mixed;
  return has("ByteFallback") ? ByteJoin::byte_runs : ByteJoin::none;
}

namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

class Replace final : public Decoder {
 public:
  Replace(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void list_steps(std::vector<std::string_view>& steps) const override { steps.push_back("Replace"); }
  Status decode_chain(std::vector<std::string>& tokens) const override {
    thread_local std::vector<Span> spans;
    std::string replaced;
    for (std::string& token : tokens) {
      PLUMB_TRY(pattern_.cover(token, spans));
      replaced.clear();
      for (const Span& span : spans)
        replaced.append(span.is_match ? std::string_view(content_)
                                      : std::string_view(token).substr(span.begin, span.end - span.begin));
      token.swap(replaced);
    }
    return {};
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class ByteFallback final : public Decoder {
 public:
  void list_steps(std::vector<std::string_view>& steps) const override { steps.push_back("ByteFallback"); }
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string bytes;
    const auto flush = [&] {
      if (bytes.empty()) return;
      // A run of byte tokens that is not valid UTF-8 becomes one U+FFFD per byte.
      if (find_invalid_utf8(bytes) == std::string_view::npos) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back(kReplacementChar);
      }
      bytes.clear();
    };
    for (std::string& token : tokens) {
      const int value = byte_fallback_value(token);
      if (value >= 0) {
        bytes.push_back(static_cast<char>(value));
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    tokens.swap(out);
    return {};
  }
};

class Fuse final : public Decoder {
 public:
  void list_steps(std::vector<std::string_view>& steps) const override { steps.push_back("Fuse"); }
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
    return {};
  }
};

class Strip final : public Decoder {
 public:
  Strip(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void list_steps(std::vector<std::string_view>& steps) const override { steps.push_back("Strip"); }
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<char32_t> chars;
    for (std::string& token : tokens) {
      chars.clear();
      for (size_t pos = 0; pos < token.size();) chars.push_back(next_code_point(token, pos));
      size_t start_cut = 0;
      while (start_cut < start_ && start_cut < chars.size() && chars[start_cut] == content_) ++start_cut;
      // `tokenizers` panics when the cuts cross or the token is shorter than `stop`; they are clamped here.
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && stop_cut > start_cut && chars[stop_cut - 1] == content_; ++i)
        --stop_cut;
      token.clear();
      for (size_t i = start_cut; i < stop_cut; ++i) append_utf8(token, chars[i]);
    }
    return {};
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ByteLevel final : public Decoder {
 public:
  void list_steps(std::vector<std::string_view>& steps) const override { steps.push_back("ByteLevel"); }
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) append_byte_level_bytes(bytes, token);
    std::string text;
    append_utf8_lossy(text, bytes);
    tokens.assign(1, std::move(text));
    return {};
  }
};

class Metaspace final : public Decoder {
 public:
  Metaspace(char32_t replacement, bool prepends) : replacement_(replacement), prepends_(prepends) {}
  void list_steps(std::vector<std::string_view>& steps) const override { steps.push_back("Metaspace"); }
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      out.clear();
      const std::string& token = tokens[i];
      for (size_t pos = 0; pos < token.size();) {
        const size_t begin = pos;
        const char32_t cp = next_code_point(token, pos);
        if (cp != replacement_) {
          out.append(token, begin, pos - begin);
        } else if (i != 0 || !prepends_) {
          out.push_back(' ');
        }
      }
      tokens[i].swap(out);
    }
    return {};
  }

 private:
  char32_t replacement_;
  bool prepends_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void list_steps(std::vector<std::string_view>& steps) const override {
    for (const auto& step : steps_) step->list_steps(steps);
  }
  Status decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) PLUMB_TRY(step->decode_chain(tokens));
    return {};
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

using DecoderResult = Result<std::unique_ptr<Decoder>>;

template <class T, class... Args>
DecoderResult make(Args&&... args) {
  return std::unique_ptr<Decoder>(std::make_unique<T>(std::forward<Args>(args)...));
}

DecoderResult parse_sequence(const Json& node, std::string_view where) {
  auto list = node.find("decoders");
  if (list == node.end() || !list->is_array())
    return error_at(where, "field", "decoders", "is missing or not a list", "a list of decoders",
                    list == node.end() ? "nothing" : json_type_name(*list));
  std::vector<std::unique_ptr<Decoder>> steps;
  for (const Json& item : *list) {
    auto step = parse_decoder(item, where);
    if (!step.ok()) return step.error();
    if (*step) steps.push_back(std::move(*step));
  }
  return make<Sequence>(std::move(steps));
}

DecoderResult parse_metaspace(const Json& node, std::string_view where) {
  auto replacement = char_field(node, "replacement", where);
  if (!replacement.ok()) return replacement.error();
  bool prepends = true;
  if (auto found = node.find("prepend_scheme"); found != node.end() && !found->is_null()) {
    if (!found->is_string() || (*found != "always" && *found != "never" && *found != "first"))
      return error_at(where, "field", "prepend_scheme", "is not known", "always, never or first",
                      found->dump());
    prepends = *found != "never";
  }
  auto add_prefix_space = bool_field(node, "add_prefix_space", true, where);
  if (!add_prefix_space.ok()) return add_prefix_space.error();
  if (!*add_prefix_space) prepends = false;
  return make<Metaspace>(*replacement, prepends);
}

DecoderResult parse_strip(const Json& node, std::string_view where) {
  auto content = char_field(node, "content", where);
  if (!content.ok()) return content.error();
  auto start = count_field(node, "start", 0, 1 << 20, where);
  auto stop = count_field(node, "stop", 0, 1 << 20, where);
  if (!start.ok()) return start.error();
  if (!stop.ok()) return stop.error();
  return make<Strip>(*content, static_cast<size_t>(*start), static_cast<size_t>(*stop));
}

}  // namespace

DecoderResult parse_decoder(const Json& node, std::string_view where) {
  if (node.is_null()) return std::unique_ptr<Decoder>();
  auto type = component_type(node, where, "decoder");
  if (!type.ok()) return type.error();
  const std::string& name = *type;
  if (name == "Sequence") return parse_sequence(node, where);
  if (name == "Replace") {
    auto pattern = parse_pattern(node.value("pattern", Json()), where);
    if (!pattern.ok()) return pattern.error();
    auto content = string_field(node, "content", where);
    if (!content.ok()) return content.error();
    return make<Replace>(std::move(*pattern), std::move(*content));
  }
  if (name == "ByteFallback") return make<ByteFallback>();
  if (name == "Fuse") return make<Fuse>();
  if (name == "Strip") return parse_strip(node, where);
  if (name == "ByteLevel") return make<ByteLevel>();
  if (name == "Metaspace") return parse_metaspace(node, where);
  return error_at(where, "decoder", name, "is not supported",
                  "Sequence, Replace, ByteFallback, Fuse, Strip, ByteLevel or Metaspace", name);
}

}  // namespace plumb::text

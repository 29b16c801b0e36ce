#include "text/tokenizer/pre_tokenizer.hpp"

#include <array>
#include <string>
#include <vector>

#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

namespace {

struct ByteLevelTable {
  std::array<char32_t, 256> chars{};
  std::array<std::string, 256> encoded;
  ByteLevelTable() {
    char32_t next_free = 256;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
      chars[byte] = printable ? static_cast<char32_t>(byte) : next_free++;
      append_utf8(encoded[byte], chars[byte]);
    }
  }
};

const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable table;
  return table;
}

// Spans of a regex cover kept by `behavior`, the match flags flipped first when `invert`.
Status split_by_pattern(const Pattern& pattern, SplitBehavior behavior, bool invert, std::string_view text,
                        std::vector<Span>& kept) {
  thread_local std::vector<Span> cover;
  PLUMB_TRY(pattern.cover(text, cover));
  if (invert)
    for (Span& span : cover) span.is_match = !span.is_match;
  apply_split_behavior(cover, behavior, kept);
  return {};
}

class Split final : public PreTokenizer {
 public:
  Split(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  Status pre_tokenize(PieceList& pieces) const override {
    return pieces.split_each([&](std::string_view text, std::vector<Span>& kept) {
      return split_by_pattern(pattern_, behavior_, invert_, text, kept);
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// Splits every piece at code points that `matches`, as `tokenizers` does with a `Fn(char) -> bool` pattern.
template <class Predicate>
Status split_by_code_points(PieceList& pieces, Predicate matches, SplitBehavior behavior) {
  thread_local std::vector<Span> cover;
  return pieces.split_each([&](std::string_view text, std::vector<Span>& kept) -> Status {
    cover_code_points(text, matches, cover);
    apply_split_behavior(cover, behavior, kept);
    return {};
  });
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, Pattern words, bool use_regex)
      : add_prefix_space_(add_prefix_space), words_(std::move(words)), use_regex_(use_regex) {}
  Status pre_tokenize(PieceList& pieces) const override {
    if (add_prefix_space_) {
      PLUMB_TRY(pieces.transform_each([](std::string_view text, bool, std::string& out) -> Status {
        if (text.front() != ' ') out.push_back(' ');
        out.append(text);
        return {};
      }));
    }
    if (use_regex_) {
      PLUMB_TRY(pieces.split_each([&](std::string_view text, std::vector<Span>& kept) {
        return split_by_pattern(words_, SplitBehavior::kIsolated, false, text, kept);
      }));
    }
    const ByteLevelTable& table = byte_level_table();
    return pieces.transform_each([&](std::string_view text, bool, std::string& out) -> Status {
      for (char byte : text) out += table.encoded[static_cast<unsigned char>(byte)];
      return {};
    });
  }

 private:
  bool add_prefix_space_;
  Pattern words_;
  bool use_regex_;
};

enum class PrependScheme { kAlways, kNever, kFirst };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {
    append_utf8(replacement_text_, replacement);
  }
  Status pre_tokenize(PieceList& pieces) const override {
    PLUMB_TRY(pieces.transform_each([&](std::string_view text, bool at_origin, std::string& out) -> Status {
      // The check runs after spaces became the replacement, so a leading space counts as one.
      const bool starts_with_replacement = text.front() == ' ' || text.starts_with(replacement_text_);
      const bool prepend =
          scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && at_origin);
      if (prepend && !starts_with_replacement) out += replacement_text_;
      for (char c : text) {
        if (c == ' ') {
          out += replacement_text_;
        } else {
          out.push_back(c);
        }
      }
      return {};
    }));
    if (!split_) return {};
    const char32_t replacement = replacement_;
    return split_by_code_points(
        pieces, [replacement](char32_t cp) { return cp == replacement; }, SplitBehavior::kMergedWithNext);
  }

 private:
  char32_t replacement_;
  std::string replacement_text_;
  PrependScheme scheme_;
  bool split_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}
  Status pre_tokenize(PieceList& pieces) const override {
    return split_by_code_points(pieces, is_numeric,
                                individual_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }

 private:
  bool individual_;
};

class Whitespace final : public PreTokenizer {
 public:
  explicit Whitespace(Pattern words) : words_(std::move(words)) {}
  Status pre_tokenize(PieceList& pieces) const override {
    // Keeps the matches of \w+|[^\w\s]+ and drops what lies between them.
    return pieces.split_each([&](std::string_view text, std::vector<Span>& kept) {
      return split_by_pattern(words_, SplitBehavior::kRemoved, true, text, kept);
    });
  }

 private:
  Pattern words_;
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  Status pre_tokenize(PieceList& pieces) const override {
    return split_by_code_points(pieces, is_white_space, SplitBehavior::kRemoved);
  }
};

class Punctuation final : public PreTokenizer {
 public:
  explicit Punctuation(SplitBehavior behavior) : behavior_(behavior) {}
  Status pre_tokenize(PieceList& pieces) const override {
    return split_by_code_points(pieces, is_punctuation, behavior_);
  }

 private:
  SplitBehavior behavior_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  Status pre_tokenize(PieceList& pieces) const override {
    for (const auto& step : steps_) PLUMB_TRY(step->pre_tokenize(pieces));
    return {};
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

using PreTokenizerResult = Result<std::unique_ptr<PreTokenizer>>;

template <class T, class... Args>
PreTokenizerResult make(Args&&... args) {
  return std::unique_ptr<PreTokenizer>(std::make_unique<T>(std::forward<Args>(args)...));
}

PreTokenizerResult parse_sequence(const Json& node, std::string_view where) {
  auto list = node.find("pretokenizers");
  if (list == node.end() || !list->is_array())
    return error_at(where, "field", "pretokenizers", "is missing or not a list", "a list of pre-tokenizers",
                    list == node.end() ? "nothing" : json_type_name(*list));
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  for (const Json& item : *list) {
    auto step = parse_pre_tokenizer(item, where);
    if (!step.ok()) return step.error();
    if (*step) steps.push_back(std::move(*step));
  }
  return make<Sequence>(std::move(steps));
}

PreTokenizerResult parse_split(const Json& node, std::string_view where) {
  auto pattern = parse_pattern(node.value("pattern", Json()), where);
  if (!pattern.ok()) return pattern.error();
  auto behavior_name = string_field(node, "behavior", where);
  if (!behavior_name.ok()) return behavior_name.error();
  auto behavior = parse_split_behavior(*behavior_name, where);
  if (!behavior.ok()) return behavior.error();
  auto invert = bool_field(node, "invert", false, where);
  if (!invert.ok()) return invert.error();
  return make<Split>(std::move(*pattern), *behavior, *invert);
}

PreTokenizerResult parse_byte_level(const Json& node, std::string_view where) {
  auto add_prefix_space = bool_field(node, "add_prefix_space", true, where);
  auto use_regex = bool_field(node, "use_regex", true, where);
  if (!add_prefix_space.ok()) return add_prefix_space.error();
  if (!use_regex.ok()) return use_regex.error();
  auto words = Pattern::regex(
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", where);
  if (!words.ok()) return words.error();
  return make<ByteLevel>(*add_prefix_space, std::move(*words), *use_regex);
}

PreTokenizerResult parse_metaspace(const Json& node, std::string_view where) {
  auto replacement = char_field(node, "replacement", where);
  if (!replacement.ok()) return replacement.error();
  PrependScheme scheme = PrependScheme::kAlways;
  if (auto found = node.find("prepend_scheme"); found != node.end() && !found->is_null()) {
    const std::string name = found->is_string() ? found->get<std::string>() : found->dump();
    if (name == "always") {
      scheme = PrependScheme::kAlways;
    } else if (name == "never") {
      scheme = PrependScheme::kNever;
    } else if (name == "first") {
      scheme = PrependScheme::kFirst;
    } else {
      return error_at(where, "field", "prepend_scheme", "is not known", "always, never or first", name);
    }
  }
  // The older add_prefix_space=false spelling means "never" and must not contradict a declared scheme.
  auto add_prefix_space = bool_field(node, "add_prefix_space", true, where);
  if (!add_prefix_space.ok()) return add_prefix_space.error();
  if (!*add_prefix_space) {
    if (scheme != PrependScheme::kNever && node.contains("prepend_scheme"))
      return error_at(where, "field", "add_prefix_space", "contradicts prepend_scheme", "true", "false");
    scheme = PrependScheme::kNever;
  }
  auto split = bool_field(node, "split", true, where);
  if (!split.ok()) return split.error();
  return make<Metaspace>(*replacement, scheme, *split);
}

}  // namespace

PreTokenizerResult parse_pre_tokenizer(const Json& node, std::string_view where) {
  if (node.is_null()) return std::unique_ptr<PreTokenizer>();
  auto type = component_type(node, where, "pre_tokenizer");
  if (!type.ok()) return type.error();
  const std::string& name = *type;
  if (name == "Sequence") return parse_sequence(node, where);
  if (name == "Split") return parse_split(node, where);
  if (name == "ByteLevel") return parse_byte_level(node, where);
  if (name == "Metaspace") return parse_metaspace(node, where);
  if (name == "Digits") {
    auto individual = bool_field(node, "individual_digits", false, where);
    if (!individual.ok()) return individual.error();
    return make<Digits>(*individual);
  }
  if (name == "Whitespace") {
    auto words = Pattern::regex("\\w+|[^\\w\\s]+", where);
    if (!words.ok()) return words.error();
    return make<Whitespace>(std::move(*words));
  }
  if (name == "WhitespaceSplit") return make<WhitespaceSplit>();
  if (name == "Punctuation") {
    auto behavior_name =
        node.contains("behavior") ? string_field(node, "behavior", where) : std::string("Isolated");
    if (!behavior_name.ok()) return behavior_name.error();
    auto behavior = parse_split_behavior(*behavior_name, where);
    if (!behavior.ok()) return behavior.error();
    return make<Punctuation>(*behavior);
  }
  return error_at(where, "pre_tokenizer", name, "is not supported",
                  "Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit or Punctuation",
                  name);
}

char32_t byte_level_char(unsigned char byte) {
  return byte_level_table().chars[byte];
}

int byte_level_byte(char32_t cp) {
  // The table maps bytes to U+0021..U+0143 one to one.
  if (cp > 0x143) return -1;
  static const std::array<int16_t, 0x144> inverse = [] {
    std::array<int16_t, 0x144> table{};
    table.fill(-1);
    for (int byte = 0; byte < 256; ++byte) table[byte_level_table().chars[byte]] = static_cast<int16_t>(byte);
    return table;
  }();
  return inverse[cp];
}

}  // namespace plumb::text

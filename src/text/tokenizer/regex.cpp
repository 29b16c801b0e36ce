#include "text/tokenizer/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "text/tokenizer/unicode.hpp"

namespace plumb::text {

struct Pattern::Compiled {
  pcre2_code* code = nullptr;
  explicit Compiled(pcre2_code* compiled) : code(compiled) {}
  Compiled(const Compiled&) = delete;
  Compiled& operator=(const Compiled&) = delete;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state: matching never allocates and the JIT gets a stack big enough for long runs.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  MatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

constexpr std::string_view kOnigWordInClass = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view kHexInClass = "0-9a-fA-F";

// Appends `members` as a class body inside a class, else as a class of its own (negated when `negate`).
void append_class(std::string& out, std::string_view members, bool in_class, bool negate) {
  if (!in_class) out.append(negate ? "[^" : "[");
  out.append(members);
  if (!in_class) out.push_back(']');
}

// Appends the replacement of escape letter `letter`; false when PCRE2 already means the same thing.
bool append_class_escape(std::string& out, char letter, bool in_class) {
  switch (letter) {
    case 's':
      out.append("\\p{White_Space}");
      return true;
    case 'S':
      out.append("\\P{White_Space}");
      return true;
    case 'w':
      append_class(out, kOnigWordInClass, in_class, false);
      return true;
    case 'h':
      append_class(out, kHexInClass, in_class, false);
      return true;
    // A negated class cannot sit inside another class; there PCRE2's own \W and \H stay.
    case 'W':
      if (in_class) return false;
      append_class(out, kOnigWordInClass, false, true);
      return true;
    case 'H':
      if (in_class) return false;
      append_class(out, kHexInClass, false, true);
      return true;
    default:
      return false;
  }
}

// Copies an inline option group "(?imx-imx" with Ruby's m (dot matches newline) spelled as PCRE2's s.
size_t copy_option_group(std::string_view pattern, size_t pos, std::string& out) {
  size_t end = pos + 2;
  while (end < pattern.size() && std::string_view("imx-").find(pattern[end]) != std::string_view::npos) ++end;
  const bool is_options =
      end > pos + 2 && end < pattern.size() && (pattern[end] == ')' || pattern[end] == ':');
  if (!is_options) {
    out += "(?";
    return pos + 2;
  }
  out += "(?";
  for (size_t i = pos + 2; i < end; ++i) out.push_back(pattern[i] == 'm' ? 's' : pattern[i]);
  return end;
}

}  // namespace

std::string translate_oniguruma(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  bool in_class = false;
  size_t pos = 0;
  while (pos < pattern.size()) {
    const char c = pattern[pos];
    if (c == '\\' && pos + 1 < pattern.size()) {
      if (!append_class_escape(out, pattern[pos + 1], in_class)) out.append(pattern.substr(pos, 2));
      pos += 2;
    } else if (!in_class && c == '(' && pattern.substr(pos, 2) == "(?") {
      pos = copy_option_group(pattern, pos, out);
    } else if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      ++pos;
      // A ']' right after '[' or '[^' is a literal member of the class.
      if (pos < pattern.size() && pattern[pos] == '^') out.push_back(pattern[pos++]);
      if (pos < pattern.size() && pattern[pos] == ']') out.push_back(pattern[pos++]);
    } else {
      if (in_class && c == ']') in_class = false;
      out.push_back(c);
      ++pos;
    }
  }
  return out;
}

Result<Pattern> Pattern::regex(std::string_view source, std::string_view where) {
  const std::string translated = translate_oniguruma(source);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return error_at(where, "regex", source, "does not compile", "a valid pattern",
                    fmt::format("{} at offset {}", reinterpret_cast<const char*>(message), error_offset));
  }
  // JIT is an optimisation only; the interpreter gives the same matches when it is unavailable.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Pattern pattern;
  pattern.compiled_ = std::make_shared<const Compiled>(code);
  return pattern;
}

Result<Pattern> Pattern::literal(std::string_view text, std::string_view where) {
  // The empty literal behaves as the empty regex: it matches between every two characters.
  if (text.empty()) return regex("", where);
  Pattern pattern;
  pattern.literal_ = std::string(text);
  return pattern;
}

Status Pattern::cover(std::string_view text, std::vector<Span>& spans) const {
  spans.clear();
  if (text.empty()) {
    spans.push_back({0, 0, false});
    return {};
  }
  uint32_t previous = 0;
  const auto add_match = [&](size_t begin, size_t end) {
    if (previous != begin) spans.push_back({previous, static_cast<uint32_t>(begin), false});
    spans.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(end), true});
    previous = static_cast<uint32_t>(end);
  };
  if (!compiled_) {
    for (size_t at = text.find(literal_); at != std::string_view::npos;
         at = text.find(literal_, at + literal_.size()))
      add_match(at, at + literal_.size());
  } else {
    MatchState& state = match_state();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t search_from = 0;
    bool have_last_end = false;
    size_t last_end = 0;
    while (search_from <= text.size()) {
      const int rc = pcre2_match(compiled_->code, subject, text.size(), search_from, PCRE2_NO_UTF_CHECK,
                                 state.data, state.context);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof(message));
        return error_at("tokenizer", "regex match", "pattern", "failed", "a match or no match",
                        reinterpret_cast<const char*>(message));
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
      const size_t begin = ovector[0], end = ovector[1];
      // Oniguruma's iterator refuses an empty match right at the end of the previous match and steps one
      // char.
      if (begin == end && have_last_end && last_end == end) {
        search_from += search_from < text.size()
                           ? utf8_sequence_length(static_cast<unsigned char>(text[search_from]))
                           : 1;
        continue;
      }
      add_match(begin, end);
      search_from = end;
      last_end = end;
      have_last_end = true;
    }
  }
  if (previous != text.size()) spans.push_back({previous, static_cast<uint32_t>(text.size()), false});
  return {};
}

bool code_point_matches_word_class(char32_t cp) {
  static const Result<Pattern> word =
      Pattern::regex("^[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]", "word");
  std::string encoded;
  append_utf8(encoded, cp);
  std::vector<Span> spans;
  if (!word.ok() || !word->cover(encoded, spans).ok()) return false;
  return !spans.empty() && spans.front().is_match;
}

}  // namespace plumb::text

// Python's str case mapping: Unicode's simple mappings (utf8proc) plus the one-to-many mappings, the
// Final_Sigma rule for lower(), and the Lowercase/Uppercase properties beyond Ll/Lu (case_tables.cpp).
#include <utf8proc.h>

#include <algorithm>

#include "text/template/case_tables.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja::py {

namespace {

utf8proc_category_t category(char32_t c) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(c)));
}

bool in_ranges(const CodeRange* ranges, std::size_t count, char32_t c) {
  const CodeRange* end = ranges + count;
  const CodeRange* found = std::upper_bound(
      ranges, end, c, [](char32_t value, const CodeRange& range) { return value < range.first; });
  return found != ranges && c <= (found - 1)->last;
}

const CaseExpansion* expansion(const CaseExpansion* table, std::size_t count, char32_t c) {
  const CaseExpansion* end = table + count;
  const CaseExpansion* found = std::lower_bound(
      table, end, c, [](const CaseExpansion& entry, char32_t value) { return entry.from < value; });
  return found != end && found->from == c ? found : nullptr;
}

bool is_lower_char(char32_t c) {
  return category(c) == UTF8PROC_CATEGORY_LL || in_ranges(kExtraLowercase, kExtraLowercase_count, c);
}
bool is_upper_char(char32_t c) {
  return category(c) == UTF8PROC_CATEGORY_LU || in_ranges(kExtraUppercase, kExtraUppercase_count, c);
}
bool is_title_char(char32_t c) {
  return category(c) == UTF8PROC_CATEGORY_LT;
}
bool is_cased(char32_t c) {
  return is_lower_char(c) || is_upper_char(c) || is_title_char(c);
}

// Case-ignorable code points, as the Final_Sigma rule skips them: marks, format characters, modifiers and the
// apostrophes, periods and colons that can sit inside a word.
bool case_ignorable(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  constexpr char32_t inside_word[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,  0x5F4,  0x2018, 0x2019,
                                      0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  return std::find(std::begin(inside_word), std::end(inside_word), c) != std::end(inside_word);
}

// Capital sigma lowers to the final form when a cased letter precedes it and none follows (both skipping
// case-ignorable code points).
bool final_sigma(const std::u32string& text, std::size_t at) {
  std::size_t before = at;
  while (before > 0 && case_ignorable(text[before - 1])) --before;
  if (before == 0 || !is_cased(text[before - 1])) return false;
  std::size_t after = at + 1;
  while (after < text.size() && case_ignorable(text[after])) ++after;
  return after == text.size() || !is_cased(text[after]);
}

void append_mapped(std::string& out, const CaseExpansion* table, std::size_t count, char32_t c,
                   utf8proc_int32_t (*simple)(utf8proc_int32_t)) {
  if (const CaseExpansion* full = expansion(table, count, c)) {
    for (char32_t part : full->to)
      if (part) append_utf8(out, part);
    return;
  }
  append_utf8(out, static_cast<char32_t>(simple(static_cast<utf8proc_int32_t>(c))));
}

void append_upper(std::string& out, char32_t c) {
  append_mapped(out, kUpperExpansions, kUpperExpansions_count, c, utf8proc_toupper);
}
void append_title(std::string& out, char32_t c) {
  append_mapped(out, kTitleExpansions, kTitleExpansions_count, c, utf8proc_totitle);
}
void append_lower(std::string& out, const std::u32string& text, std::size_t at) {
  if (text[at] == 0x3A3 && final_sigma(text, at)) {
    append_utf8(out, 0x3C2);
    return;
  }
  append_mapped(out, kLowerExpansions, kLowerExpansions_count, text[at], utf8proc_tolower);
}

}  // namespace

std::string upper(std::string_view text) {
  std::string out;
  for (char32_t c : decode(text)) append_upper(out, c);
  return out;
}

std::string lower(std::string_view text) {
  const std::u32string chars = decode(text);
  std::string out;
  for (std::size_t i = 0; i < chars.size(); ++i) append_lower(out, chars, i);
  return out;
}

std::string title(std::string_view text) {
  const std::u32string chars = decode(text);
  std::string out;
  bool previous_cased = false;
  for (std::size_t i = 0; i < chars.size(); ++i) {
    if (previous_cased)
      append_lower(out, chars, i);
    else
      append_title(out, chars[i]);
    previous_cased = is_cased(chars[i]);
  }
  return out;
}

std::string capitalize(std::string_view text) {
  const std::u32string chars = decode(text);
  std::string out;
  for (std::size_t i = 0; i < chars.size(); ++i) {
    if (i == 0)
      append_title(out, chars[i]);
    else
      append_lower(out, chars, i);
  }
  return out;
}

std::string title_words(std::string_view text) {
  // Jinja's title filter splits at runs of whitespace, '-', '(', '{', '[' and '<', then upper-cases each
  // piece's first character and lowers the rest of the piece on its own.
  auto separator = [](char32_t c) {
    return is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  };
  const std::u32string chars = decode(text);
  std::string out;
  std::size_t start = 0;
  while (start < chars.size()) {
    const bool separators = separator(chars[start]);
    std::size_t end = start;
    while (end < chars.size() && separator(chars[end]) == separators) ++end;
    append_upper(out, chars[start]);
    out += lower(encode(std::u32string_view(chars).substr(start + 1, end - start - 1)));
    start = end;
  }
  return out;
}

bool is_cased_lower(std::string_view text) {
  bool any_cased = false;
  for (char32_t c : decode(text)) {
    if (is_upper_char(c) || is_title_char(c)) return false;
    any_cased = any_cased || is_lower_char(c);
  }
  return any_cased;
}

bool is_cased_upper(std::string_view text) {
  bool any_cased = false;
  for (char32_t c : decode(text)) {
    if (is_lower_char(c) || is_title_char(c)) return false;
    any_cased = any_cased || is_upper_char(c);
  }
  return any_cased;
}

}  // namespace plumb::text::jinja::py

#include "text/tokenizer/unicode.hpp"

#include <utf8proc.h>

#include "text/tokenizer/regex.hpp"

namespace plumb::text {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Length of the valid sequence at `pos`, or 0; `*prefix` gets how many bytes form a valid start of one.
size_t valid_sequence_at(std::string_view bytes, size_t pos, size_t* prefix) {
  const auto at = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char lead = at(pos);
  *prefix = 0;
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  *prefix = 1;
  for (size_t i = 1; i < length; ++i) {
    if (pos + i >= bytes.size()) return 0;
    const unsigned char next = at(pos + i);
    if (next < (i == 1 ? low : 0x80) || next > (i == 1 ? high : 0xBF)) return 0;
    *prefix = i + 1;
  }
  return length;
}

}  // namespace

size_t find_invalid_utf8(std::string_view text) {
  size_t pos = 0, prefix = 0;
  while (pos < text.size()) {
    const size_t length = valid_sequence_at(text, pos, &prefix);
    if (length == 0) return pos;
    pos += length;
  }
  return std::string_view::npos;
}

void append_utf8_lossy(std::string& out, std::string_view bytes) {
  size_t pos = 0, prefix = 0;
  while (pos < bytes.size()) {
    const size_t length = valid_sequence_at(bytes, pos, &prefix);
    if (length > 0) {
      out.append(bytes.substr(pos, length));
      pos += length;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += prefix > 0 ? prefix : 1;
    }
  }
}

size_t unfinished_utf8_start(std::string_view bytes) {
  // An unfinished character is at most three bytes, and its lead byte is the last non-continuation byte.
  for (size_t back = 1; back <= 3 && back <= bytes.size(); ++back) {
    const size_t pos = bytes.size() - back;
    if ((static_cast<unsigned char>(bytes[pos]) & 0xC0) == 0x80) continue;
    size_t prefix = 0;
    const bool unfinished = valid_sequence_at(bytes, pos, &prefix) == 0 && pos + prefix == bytes.size();
    return unfinished ? pos : bytes.size();
  }
  return bytes.size();
}

bool is_white_space(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_numeric(char32_t cp) {
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t cp) {
  if (cp < 0x80)
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return category >= UTF8PROC_CATEGORY_PC && category <= UTF8PROC_CATEGORY_PO;
}

bool is_regex_word(char32_t cp) {
  if (cp < 0x80)
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  return code_point_matches_word_class(cp);
}

void append_lowercase(std::string& out, char32_t cp) {
  // U+0130 is the one code point whose unconditional full lowercase mapping has two code points.
  if (cp == 0x130) {
    out.append("i\xCC\x87");
    return;
  }
  append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

}  // namespace plumb::text

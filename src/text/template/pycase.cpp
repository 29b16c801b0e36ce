// Character classes, repr() and float formatting with Python's rules.
#include <utf8proc.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "text/template/case_tables.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja::py {

namespace {
utf8proc_category_t category(char32_t c) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(c)));
}
bool is_alpha(char32_t c) {
  const auto kind = category(c);
  return kind >= UTF8PROC_CATEGORY_LU && kind <= UTF8PROC_CATEGORY_LO;
}
bool is_digit(char32_t c) {
  if (category(c) == UTF8PROC_CATEGORY_ND) return true;
  for (std::size_t i = 0; i < kExtraDigits_count; ++i)
    if (c >= kExtraDigits[i].first && c <= kExtraDigits[i].last) return true;
  return false;
}
bool is_numeric_category(char32_t c) {
  const auto kind = category(c);
  return kind == UTF8PROC_CATEGORY_ND || kind == UTF8PROC_CATEGORY_NL || kind == UTF8PROC_CATEGORY_NO;
}

// Python's str.isprintable(): everything but the Other and Separator categories, the ASCII space excepted.
bool printable(char32_t c) {
  if (c == ' ') return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

}  // namespace

bool all_of_class(std::string_view text, char which) {
  const std::u32string code_points = decode(text);
  if (code_points.empty()) return false;
  for (char32_t c : code_points) {
    const bool in_class = which == 'a'   ? is_alpha(c)
                          : which == 'd' ? is_digit(c)
                          : which == 'n' ? (is_alpha(c) || is_numeric_category(c))
                                         : is_space(c);
    if (!in_class) return false;
  }
  return true;
}

std::string repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : decode(text)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && !printable(c))) {
      char buffer[16];
      const char* layout = c <= 0xFF ? "\\x%02x" : c <= 0xFFFF ? "\\u%04x" : "\\U%08x";
      std::snprintf(buffer, sizeof buffer, layout, static_cast<unsigned>(c));
      out += buffer;
    } else {
      append_utf8(out, c);
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, then laid out as Python's repr does.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string scientific(buffer, result.ptr);
  const std::size_t e_pos = scientific.find('e');
  std::string mantissa = scientific.substr(0, e_pos);
  const int exponent = std::atoi(scientific.c_str() + e_pos + 1);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_text[16];
    std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_text;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  const auto integer_digits = static_cast<std::size_t>(exponent + 1);
  if (digits.size() <= integer_digits)
    return out + digits + std::string(integer_digits - digits.size(), '0') + ".0";
  return out + digits.substr(0, integer_digits) + "." + digits.substr(integer_digits);
}

}  // namespace plumb::text::jinja::py

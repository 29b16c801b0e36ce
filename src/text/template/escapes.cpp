// String literal escapes.
#include <cstdlib>

#include "text/template/lexer.hpp"
#include "text/template/pystr.hpp"
#include "text/template/value.hpp"

namespace plumb::text::jinja {

namespace {
[[noreturn]] void fail_at(int line, std::string message) {
  throw TemplateFailure{std::move(message), line};
}
}  // namespace

// Python's unicode-escape rules, which Jinja applies to string literals; unknown escapes are kept as written.
std::string decode_escapes(std::string_view raw, int line) {
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      out += raw[i];
      continue;
    }
    const char c = raw[++i];
    switch (c) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        out += c;
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        const std::size_t width = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        const std::string hex(raw.substr(i + 1, width));
        if (hex.size() != width || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
          fail_at(line, "string escape '\\" + std::string(1, c) + hex + "' is truncated; expected " +
                            std::to_string(width) + " hex digits");
        const unsigned long code_point = std::strtoul(hex.c_str(), nullptr, 16);
        if ((code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF)
          fail_at(line, "string escape '\\" + std::string(1, c) + hex + "' is not a Unicode scalar value");
        py::append_utf8(out, static_cast<char32_t>(code_point));
        i += width;
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          unsigned code_point = 0;
          std::size_t used = 0;
          while (used < 3 && i + used < raw.size() && raw[i + used] >= '0' && raw[i + used] <= '7')
            code_point = code_point * 8 + static_cast<unsigned>(raw[i + used++] - '0');
          py::append_utf8(out, code_point);
          i += used - 1;
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

}  // namespace plumb::text::jinja

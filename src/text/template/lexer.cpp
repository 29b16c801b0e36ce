#include "text/template/lexer.hpp"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "text/template/pystr.hpp"
#include "text/template/value.hpp"

namespace plumb::text::jinja {

namespace {

constexpr std::array<std::string_view, 26> kOperators = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                                         "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                                         ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}
bool is_tag_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

[[noreturn]] void fail_at(int line, std::string message) {
  throw TemplateFailure{std::move(message), line};
}

// Jinja reads "\r\n" and "\r" as "\n" and drops one trailing newline (keep_trailing_newline is off).
std::string normalize(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_data();
    push(Tok::End, "", line_);
    return std::move(out_);
  }

 private:
  std::string src_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> out_;

  bool at(std::string_view text) const { return src_.compare(pos_, text.size(), text) == 0; }
  Token& push(Tok type, std::string text, int line) {
    out_.push_back(Token{type, std::move(text), line, 0, 0.0});
    return out_.back();
  }
  void advance(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
      if (src_[pos_ + i] == '\n') ++line_;
    pos_ += count;
  }
  // Skips Python-\s whitespace after a "-" closing tag; reports whether the skipped text ended with a
  // newline.
  bool skip_space() {
    const std::size_t start = pos_;
    std::size_t end = pos_;
    while (end < src_.size()) {
      std::size_t next = end + 1;
      while (next < src_.size() && (static_cast<unsigned char>(src_[next]) & 0xC0) == 0x80) ++next;
      const std::u32string code_point = py::decode(std::string_view(src_).substr(end, next - end));
      if (code_point.empty() || !py::is_space(code_point[0])) break;
      end = next;
    }
    advance(end - start);
    return end > start && src_[end - 1] == '\n';
  }

  void lex_data();
  void emit_text(std::string text, int line, char kind, char sign);
  void lex_comment(int line);
  void lex_raw(std::size_t body_start, int line);
  void lex_tag(char kind, int open_line);
  bool lex_tag_end(char kind, bool emit = true);
  void lex_number();
  void lex_string(int line);
};

void Lexer::lex_data() {
  std::size_t tag = pos_;
  while (true) {
    tag = src_.find('{', tag);
    if (tag == std::string::npos || tag + 1 >= src_.size()) {
      tag = std::string::npos;
      break;
    }
    const char next = src_[tag + 1];
    if (next == '{' || next == '%' || next == '#') break;
    ++tag;
  }
  const int text_line = line_;
  if (tag == std::string::npos) {
    std::string text = src_.substr(pos_);
    advance(src_.size() - pos_);
    push(Tok::Text, std::move(text), text_line);
    return;
  }
  const char kind = src_[tag + 1];
  const char sign =
      tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
  std::string text = src_.substr(pos_, tag - pos_);
  advance(tag - pos_);
  emit_text(std::move(text), text_line, kind, sign);
  const int tag_line = line_;
  advance(sign ? 3 : 2);
  if (kind == '#') return lex_comment(tag_line);
  if (kind == '%') {
    // A raw block: "{% raw %}" up to "{% endraw %}" is kept as text.
    std::size_t probe = pos_;
    while (probe < src_.size() && is_tag_space(src_[probe])) ++probe;
    if (src_.compare(probe, 3, "raw") == 0) {
      std::size_t after = probe + 3;
      while (after < src_.size() && is_tag_space(src_[after])) ++after;
      if (src_.compare(after, 3, "-%}") == 0 || src_.compare(after, 2, "%}") == 0) {
        advance(after - pos_);
        if (at("-%}")) {
          advance(3);
          skip_space();
        } else {
          advance(2);
        }
        return lex_raw(pos_, tag_line);
      }
    }
  }
  push(kind == '%' ? Tok::BlockBegin : Tok::VarBegin, kind == '%' ? "{%" : "{{", tag_line);
  lex_tag(kind, tag_line);
}

void Lexer::emit_text(std::string text, int line, char kind, char sign) {
  if (sign == '-') {
    text = py::strip(text, std::nullopt, false, true);
  } else if (sign != '+' && kind != '{') {
    // lstrip_blocks: spaces and tabs between a line start and a block or comment tag are dropped.
    const std::size_t newline = text.rfind('\n');
    const std::size_t line_start = newline == std::string::npos ? 0 : newline + 1;
    if (line_start > 0 || line_starting_) {
      if (text.find_first_not_of(" \t", line_start) == std::string::npos) text.resize(line_start);
    }
  }
  line_starting_ = false;
  if (!text.empty()) push(Tok::Text, std::move(text), line);
}

void Lexer::lex_comment(int line) {
  const std::size_t end = src_.find("#}", pos_);
  if (end == std::string::npos) {
    if (pos_ == src_.size()) return;  // Jinja ends quietly on a "{#" that closes the template
    fail_at(line, "comment is not closed; expected '#}' before the end of the template");
  }
  const char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
  advance(end + 2 - pos_);
  if (sign == '-') {
    line_starting_ = skip_space();
  } else if (sign != '+' && at("\n")) {
    advance(1);
    line_starting_ = true;
  } else {
    line_starting_ = false;
  }
}

void Lexer::lex_raw(std::size_t body_start, int line) {
  std::size_t search = body_start;
  while (true) {
    const std::size_t open = src_.find("{%", search);
    if (open == std::string::npos) fail_at(line, "raw block is not closed; expected '{% endraw %}'");
    std::size_t probe = open + 2;
    const char sign = probe < src_.size() && (src_[probe] == '-' || src_[probe] == '+') ? src_[probe] : 0;
    if (sign) ++probe;
    while (probe < src_.size() && is_tag_space(src_[probe])) ++probe;
    if (src_.compare(probe, 6, "endraw") != 0) {
      search = open + 2;
      continue;
    }
    probe += 6;
    while (probe < src_.size() && is_tag_space(src_[probe])) ++probe;
    const bool closes = src_.compare(probe, 2, "%}") == 0 || src_.compare(probe, 3, "-%}") == 0 ||
                        src_.compare(probe, 3, "+%}") == 0;
    if (!closes) {
      search = open + 2;
      continue;
    }
    std::string body = src_.substr(body_start, open - body_start);
    const int body_line = line_;
    advance(open - pos_);
    line_starting_ = false;
    if (sign == '-') body = py::strip(body, std::nullopt, false, true);
    if (!body.empty()) push(Tok::Text, std::move(body), body_line);
    advance(probe - pos_);
    lex_tag_end('%', false);
    return;
  }
}

bool Lexer::lex_tag_end(char kind, bool emit) {
  if (kind == '%') {
    if (at("-%}")) {
      advance(3);
      line_starting_ = skip_space();
    } else if (at("+%}")) {
      advance(3);
      line_starting_ = false;
    } else if (at("%}")) {
      advance(2);
      line_starting_ = at("\n");
      if (line_starting_) advance(1);  // trim_blocks
    } else {
      return false;
    }
    if (emit) push(Tok::BlockEnd, "%}", line_);
    return true;
  }
  if (at("-}}")) {
    advance(3);
    line_starting_ = skip_space();
  } else if (at("}}")) {
    advance(2);
    line_starting_ = false;
  } else {
    return false;
  }
  push(Tok::VarEnd, "}}", line_);
  return true;
}

void Lexer::lex_tag(char kind, int open_line) {
  std::string balance;
  while (true) {
    if (pos_ >= src_.size())
      fail_at(open_line, std::string("tag is not closed; expected '") + (kind == '%' ? "%}" : "}}") +
                             "' before the end of the template");
    if (balance.empty() && lex_tag_end(kind)) return;
    const char c = src_[pos_];
    if (is_tag_space(c)) {
      advance(1);
    } else if (is_digit(c)) {
      lex_number();
    } else if (is_name_start(c)) {
      const std::size_t start = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      push(Tok::Name, src_.substr(start, pos_ - start), line_);
    } else if (c == '\'' || c == '"') {
      lex_string(line_);
    } else {
      std::string_view op;
      for (std::string_view candidate : kOperators)
        if (at(candidate)) {
          op = candidate;
          break;
        }
      if (op.empty()) fail_at(line_, "character '" + std::string(1, c) + "' is not allowed inside a tag");
      const char open = op[0];
      if (open == '(' || open == '[' || open == '{') {
        balance += open == '(' ? ')' : open == '[' ? ']' : '}';
      } else if (open == ')' || open == ']' || open == '}') {
        if (balance.empty() || balance.back() != open)
          fail_at(line_, "bracket '" + std::string(op) + "' does not close an open bracket" +
                             (balance.empty() ? std::string()
                                              : "; expected '" + std::string(1, balance.back()) + "'"));
        balance.pop_back();
      }
      push(Tok::Op, std::string(op), line_);
      pos_ += op.size();
    }
  }
}

void Lexer::lex_number() {
  const std::size_t start = pos_;
  auto digits = [&] {
    while (pos_ < src_.size() && (is_digit(src_[pos_]) ||
                                  (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))))
      ++pos_;
  };
  digits();
  bool is_float = false;
  const bool after_dot = start > 0 && src_[start - 1] == '.';
  if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
    ++pos_;
    digits();
    is_float = true;
  }
  if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
    std::size_t probe = pos_ + 1;
    if (probe < src_.size() && (src_[probe] == '+' || src_[probe] == '-')) ++probe;
    if (probe < src_.size() && is_digit(src_[probe])) {
      pos_ = probe;
      digits();
      is_float = true;
    }
  }
  std::string text;
  for (std::size_t i = start; i < pos_; ++i)
    if (src_[i] != '_') text += src_[i];
  Token& token = push(is_float ? Tok::Float : Tok::Int, text, line_);
  if (is_float) {
    token.float_value = std::strtod(text.c_str(), nullptr);
    return;
  }
  if (text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos)
    fail_at(line_,
            "integer literal '" + text + "' has a leading zero; expected a decimal integer without one");
  errno = 0;
  const unsigned long long parsed = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || parsed > static_cast<unsigned long long>(INT64_MAX))
    fail_at(line_, "integer literal '" + text + "' is too large; expected at most 9223372036854775807");
  token.int_value = static_cast<std::int64_t>(parsed);
}

void Lexer::lex_string(int line) {
  const char quote = src_[pos_];
  std::size_t end = pos_ + 1;
  while (end < src_.size() && src_[end] != quote) end += src_[end] == '\\' ? 2 : 1;
  if (end >= src_.size())
    fail_at(line, "string literal is not closed; expected a closing " + std::string(1, quote));
  const std::string_view raw = std::string_view(src_).substr(pos_ + 1, end - pos_ - 1);
  advance(end + 1 - pos_);
  push(Tok::String, decode_escapes(raw, line), line);
}

}  // namespace

std::string describe(const Token& token) {
  switch (token.type) {
    case Tok::End:
      return "end of template";
    case Tok::Text:
      return "template text";
    case Tok::BlockEnd:
      return "'%}'";
    case Tok::VarEnd:
      return "'}}'";
    case Tok::BlockBegin:
      return "'{%'";
    case Tok::VarBegin:
      return "'{{'";
    case Tok::String:
      return "string literal";
    default:
      return "'" + token.text + "'";
  }
}

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace plumb::text::jinja

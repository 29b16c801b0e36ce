#pragma once
// Splits template source into tokens the way Jinja's lexer does with trim_blocks and lstrip_blocks on (the
// settings Hugging Face uses for chat templates).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::text::jinja {

enum class Tok : std::uint8_t {
  Text,
  VarBegin,
  VarEnd,
  BlockBegin,
  BlockEnd,
  Name,
  String,
  Int,
  Float,
  Op,
  End
};

struct Token {
  Tok type = Tok::End;
  std::string text;  // Text data, name, decoded string literal, or operator
  int line = 1;
  std::int64_t int_value = 0;
  double float_value = 0.0;
};

// Throws TemplateFailure (with the line set) on malformed input.
std::vector<Token> tokenize(std::string_view source);

std::string describe(const Token& token);

// The text of a string literal's body (between its quotes) with Python's unicode-escape rules, as Jinja
// applies them; unknown escapes are kept as written. Throws TemplateFailure on a malformed escape.
std::string decode_escapes(std::string_view raw, int line);

}  // namespace plumb::text::jinja

#pragma once
// Patterns of tokenizer.json: Oniguruma-flavoured regexes run through PCRE2 (UTF, UCP, JIT), and literal
// strings.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace plumb::text {

// One span of a cover of the searched text: a match of the pattern or the text between two matches.
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool is_match = false;
};

class Pattern {
 public:
  // `pattern` in Oniguruma syntax (what `tokenizers` compiles); `where` names it in errors.
  static Result<Pattern> regex(std::string_view pattern, std::string_view where);
  // Matches `text` exactly (a "String" pattern).
  static Result<Pattern> literal(std::string_view text, std::string_view where);

  // Covers `text` with alternating non-match and match spans, in Oniguruma's find order (empty matches never
  // repeat at the end of the previous match). Empty text gives one empty non-match span.
  Status cover(std::string_view text, std::vector<Span>& spans) const;

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;
  std::string literal_;
};

// Rewrites Oniguruma's \s \S \w \W \h \H and (?m) into the PCRE2 spellings that mean the same characters.
std::string translate_oniguruma(std::string_view pattern);

// The Rust regex `\w` class for one code point outside ASCII.
bool code_point_matches_word_class(char32_t cp);

}  // namespace plumb::text

#pragma once
// Python's str semantics over UTF-8 (code point indices, Unicode whitespace, case mapping, repr), as
// templates see them through Jinja.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::text::jinja::py {

bool valid_utf8(std::string_view text);
std::u32string decode(std::string_view utf8);
std::string encode(std::u32string_view code_points);
void append_utf8(std::string& out, char32_t code_point);
std::size_t length(std::string_view utf8);

// str.isspace() for one code point (whitespace, line and paragraph separators).
bool is_space(char32_t code_point);
bool all_space(std::string_view utf8);

// str.strip/lstrip/rstrip; without `chars` they strip whitespace.
std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);
// str.split/rsplit; without `sep` they split on runs of whitespace.
std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep,
                               std::int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view text, const std::optional<std::string>& sep,
                                std::int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view text, bool keepends);
// Fails (TemplateFailure) when the result would be larger than `max_bytes`, before building it.
std::string replace(std::string_view text, std::string_view old, std::string_view replacement,
                    std::int64_t count, std::size_t max_bytes);
// Code point index of the first (or last) occurrence, or -1.
std::int64_t find(std::string_view text, std::string_view sub, bool last);
std::int64_t count(std::string_view text, std::string_view sub);

std::string upper(std::string_view text);
std::string lower(std::string_view text);
// str.title(): a letter after an uncased character is title-cased, others are lowered.
std::string title(std::string_view text);
// str.capitalize(): the first character title-cased, the rest lowered.
std::string capitalize(std::string_view text);
// Jinja's title filter: each word (split at whitespace, '-', '(', '{', '[', '<') capitalized.
std::string title_words(std::string_view text);
bool is_cased_lower(std::string_view text);
bool is_cased_upper(std::string_view text);
bool all_of_class(std::string_view text, char which);

// repr() of a str: single quotes unless the text holds a single quote and no double quote.
std::string repr(std::string_view text);
// repr() of a float: the shortest digits that round-trip, in Python's layout ("1.0", "1e-05", "1e+16").
std::string float_repr(double value);

}  // namespace plumb::text::jinja::py

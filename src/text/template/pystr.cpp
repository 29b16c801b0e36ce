#include "text/template/pystr.hpp"

#include "text/template/value.hpp"

#include <utf8proc.h>

#include <algorithm>

namespace plumb::text::jinja::py {

bool valid_utf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t pos = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (pos < size) {
    utf8proc_int32_t code_point = 0;
    const utf8proc_ssize_t used = utf8proc_iterate(bytes + pos, size - pos, &code_point);
    if (used <= 0) return false;
    pos += used;
  }
  return true;
}

std::u32string decode(std::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  utf8proc_ssize_t pos = 0;
  const auto size = static_cast<utf8proc_ssize_t>(utf8.size());
  while (pos < size) {
    utf8proc_int32_t code_point = 0;
    utf8proc_ssize_t used = utf8proc_iterate(bytes + pos, size - pos, &code_point);
    // Text reaching the evaluator is validated on entry; a stray byte still decodes to U+FFFD, never loops.
    if (used <= 0) {
      code_point = 0xFFFD;
      used = 1;
    }
    out.push_back(static_cast<char32_t>(code_point));
    pos += used;
  }
  return out;
}

void append_utf8(std::string& out, char32_t code_point) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t used = utf8proc_encode_char(static_cast<utf8proc_int32_t>(code_point), buffer);
  out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(used));
}

std::string encode(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t code_point : code_points) append_utf8(out, code_point);
  return out;
}

std::size_t length(std::string_view utf8) {
  std::size_t count = 0;
  for (char byte : utf8)
    if ((static_cast<unsigned char>(byte) & 0xC0) != 0x80) ++count;
  return count;
}

bool is_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  switch (c) {
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
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool all_space(std::string_view utf8) {
  for (char32_t c : decode(utf8))
    if (!is_space(c)) return false;
  return true;
}

std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string code_points = decode(text);
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  std::size_t begin = 0;
  std::size_t end = code_points.size();
  if (left)
    while (begin < end && strippable(code_points[begin])) ++begin;
  if (right)
    while (end > begin && strippable(code_points[end - 1])) --end;
  return encode(std::u32string_view(code_points).substr(begin, end - begin));
}

namespace {
std::vector<std::string> split_whitespace(std::string_view text, std::int64_t maxsplit, bool from_right) {
  std::u32string code_points = decode(text);
  if (from_right) std::reverse(code_points.begin(), code_points.end());
  std::vector<std::u32string> parts;
  std::size_t pos = 0;
  const std::size_t size = code_points.size();
  while (true) {
    while (pos < size && is_space(code_points[pos])) ++pos;
    if (pos == size) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
      std::size_t end = size;
      parts.push_back(code_points.substr(pos, end - pos));
      break;
    }
    std::size_t end = pos;
    while (end < size && !is_space(code_points[end])) ++end;
    parts.push_back(code_points.substr(pos, end - pos));
    pos = end;
  }
  std::vector<std::string> out;
  for (auto& part : parts) {
    if (from_right) std::reverse(part.begin(), part.end());
    out.push_back(encode(part));
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}
}  // namespace

std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep,
                               std::int64_t maxsplit) {
  if (!sep) return split_whitespace(text, maxsplit, false);
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
    const std::size_t found = text.find(*sep, pos);
    if (found == std::string_view::npos) break;
    out.emplace_back(text.substr(pos, found - pos));
    pos = found + sep->size();
  }
  out.emplace_back(text.substr(pos));
  return out;
}

std::vector<std::string> rsplit(std::string_view text, const std::optional<std::string>& sep,
                                std::int64_t maxsplit) {
  if (!sep) return split_whitespace(text, maxsplit, true);
  std::vector<std::string> out;
  std::size_t end = text.size();
  while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
    if (end < sep->size()) break;
    const std::size_t found = text.rfind(*sep, end - sep->size());
    if (found == std::string_view::npos) break;
    out.emplace_back(text.substr(found + sep->size(), end - found - sep->size()));
    end = found;
  }
  out.emplace_back(text.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view text, bool keepends) {
  const std::u32string code_points = decode(text);
  std::vector<std::string> out;
  std::size_t start = 0;
  std::size_t pos = 0;
  const std::size_t size = code_points.size();
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
           c == 0x85 || c == 0x2028 || c == 0x2029;
  };
  while (pos < size) {
    if (!is_break(code_points[pos])) {
      ++pos;
      continue;
    }
    std::size_t end = pos + 1;
    if (code_points[pos] == '\r' && end < size && code_points[end] == '\n') ++end;
    const std::size_t keep = keepends ? end : pos;
    out.push_back(encode(std::u32string_view(code_points).substr(start, keep - start)));
    start = pos = end;
  }
  if (start < size) out.push_back(encode(std::u32string_view(code_points).substr(start)));
  return out;
}

std::string replace(std::string_view text, std::string_view old, std::string_view replacement,
                    std::int64_t count, std::size_t max_bytes) {
  // The result's size is known before it is built, so an oversized one is refused without building it.
  std::int64_t occurrences = old.empty() ? static_cast<std::int64_t>(length(text)) + 1 : py::count(text, old);
  if (count >= 0) occurrences = std::min(occurrences, count);
  const long double projected =
      static_cast<long double>(text.size()) +
      static_cast<long double>(occurrences) *
          (static_cast<long double>(replacement.size()) - static_cast<long double>(old.size()));
  if (projected > static_cast<long double>(max_bytes))
    fail("replace() result is larger than the limit; expected at most " + std::to_string(max_bytes) +
         " bytes");
  std::string out;
  std::int64_t done = 0;
  auto allowed = [&] { return count < 0 || done < count; };
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    const std::u32string code_points = decode(text);
    for (char32_t c : code_points) {
      if (allowed()) {
        out += replacement;
        ++done;
      }
      append_utf8(out, c);
    }
    if (allowed()) out += replacement;
    return out;
  }
  std::size_t pos = 0;
  while (allowed()) {
    const std::size_t found = text.find(old, pos);
    if (found == std::string_view::npos) break;
    out.append(text.substr(pos, found - pos));
    out.append(replacement);
    pos = found + old.size();
    ++done;
  }
  out.append(text.substr(pos));
  return out;
}

std::int64_t find(std::string_view text, std::string_view sub, bool last) {
  const std::size_t found = last ? text.rfind(sub) : text.find(sub);
  if (found == std::string_view::npos) return -1;
  return static_cast<std::int64_t>(length(text.substr(0, found)));
}

std::int64_t count(std::string_view text, std::string_view sub) {
  if (sub.empty()) return static_cast<std::int64_t>(length(text)) + 1;
  std::int64_t found = 0;
  for (std::size_t pos = text.find(sub); pos != std::string_view::npos;
       pos = text.find(sub, pos + sub.size()))
    ++found;
  return found;
}

}  // namespace plumb::text::jinja::py

#pragma once
// Text for one-line messages: untrusted names are escaped and shortened, byte counts are made readable.
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace plumb {

// Escapes every byte outside printable ASCII as \xNN and cuts the result near `limit` characters, so that a
// name taken from a file can never break a message over several lines.
inline std::string printable(std::string_view text, size_t limit = 120) {
  std::string shown;
  for (unsigned char byte : text) {
    if (shown.size() >= limit) return shown + "...";
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      shown += static_cast<char>(byte);
    } else {
      shown += fmt::format("\\x{:02x}", byte);
    }
  }
  return shown;
}

// "1.50 GiB (1610612736 bytes)" style; whole bytes below 1 KiB.
inline std::string human_bytes(uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double scaled = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (scaled >= 1024.0 && unit + 1 < std::size(kUnits)) {
    scaled /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.2f} {}", scaled, kUnits[unit]);
}

}  // namespace plumb

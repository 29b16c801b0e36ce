#include "core/npy.hpp"

#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace plumb {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
static_assert(std::endian::native == std::endian::little, "npy files are written as little-endian");

std::string shape_tuple(const Shape& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1) text += ",";
  return text + ")";
}

Error bad(const std::string& path, std::string_view problem, std::string_view expected,
          std::string_view got) {
  return error_at(path, "npy file", path, problem, expected, got);
}

}  // namespace

std::string npy_bytes(const Shape& shape, const std::vector<float>& values) {
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}", shape_tuple(shape));
  const size_t unpadded = kMagicBytes + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, kMagicBytes);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  const size_t start = bytes.size();
  bytes.resize(start + values.size() * sizeof(float));
  std::memcpy(bytes.data() + start, values.data(), values.size() * sizeof(float));
  return bytes;
}

Status write_npy(const std::string& path, const Shape& shape, const std::vector<float>& values) {
  PLUMB_ASSERT(static_cast<int64_t>(values.size()) == shape_elements(shape), "npy values match the shape");
  const std::string bytes = npy_bytes(shape, values);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) return bad(path, "could not be written", "a writable path", "a write failure");
  return {};
}

Result<NpyArray> read_npy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return bad(path, "cannot be opened", "a readable file", "an open failure");
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string bytes = buffer.str();
  if (bytes.size() < 10 || bytes.compare(0, kMagicBytes, kMagic, kMagicBytes) != 0)
    return bad(path, "does not start with the npy magic", "\\x93NUMPY", "other bytes");
  const auto major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    return bad(path, "has an npy version that is not known", "1, 2 or 3", std::to_string(major));
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_bytes)
    return bad(path, "has a header past its end", "a complete header", "a cut file");
  size_t header_length = 0;
  for (size_t i = 0; i < length_bytes; ++i)
    header_length |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  const size_t data_start = 8 + length_bytes + header_length;
  if (data_start > bytes.size())
    return bad(path, "has a header past its end", "a complete header", "a cut file");
  const std::string header = bytes.substr(8 + length_bytes, header_length);
  std::smatch match;
  static const std::regex descr_pattern("'descr':\\s*'([<|]f[48])'");
  static const std::regex shape_pattern("'shape':\\s*\\(([0-9, ]*)\\)");
  if (header.find("'fortran_order': False") == std::string::npos)
    return bad(path, "is not in C order", "'fortran_order': False", header);
  if (!std::regex_search(header, match, descr_pattern))
    return bad(path, "does not hold little-endian floats", "'descr': '<f4' or '<f8'", header);
  const bool doubles = match[1].str().back() == '8';
  if (!std::regex_search(header, match, shape_pattern))
    return bad(path, "has no shape", "'shape': (...)", header);
  NpyArray array;
  const size_t data_bytes = bytes.size() - data_start;
  size_t elements = 1;  // kept at most data_bytes, so the product of a hostile shape cannot overflow
  std::stringstream dims(match[1].str());
  for (std::string dim; std::getline(dims, dim, ',');) {
    const size_t begin = dim.find_first_not_of(' ');
    if (begin == std::string::npos) continue;
    int64_t extent = -1;
    const auto [end, problem] = std::from_chars(dim.data() + begin, dim.data() + dim.size(), extent);
    if (problem != std::errc() || extent < 0 || extent > (int64_t{1} << 40))
      return bad(path, "has an unreadable shape", "small non-negative integers", match[1].str());
    if (extent > 0 && elements > data_bytes / static_cast<size_t>(extent))
      return bad(path, "has a shape larger than its data",
                 fmt::format("a shape within its {} data bytes", data_bytes), match[1].str());
    elements *= static_cast<size_t>(extent);
    array.shape.push_back(extent);
  }
  const size_t count = elements;
  const size_t element = doubles ? 8 : 4;
  if (data_bytes != count * element)
    return bad(path, "holds the wrong number of bytes for its shape", std::to_string(count * element),
               std::to_string(data_bytes));
  array.values.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (doubles) {
      double value;
      std::memcpy(&value, bytes.data() + data_start + i * 8, 8);
      array.values[i] = static_cast<float>(value);
    } else {
      std::memcpy(&array.values[i], bytes.data() + data_start + i * 4, 4);
    }
  }
  return array;
}

}  // namespace plumb

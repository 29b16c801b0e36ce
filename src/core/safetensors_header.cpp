// Validation of one safetensors file: header length, JSON, metadata, every tensor entry, then spans.
#include <algorithm>
#include <limits>
#include <numeric>

#include "core/json_text.hpp"
#include "core/printable.hpp"
#include "core/safetensors.hpp"

namespace plumb {

using nlohmann::json;

namespace {

constexpr std::string_view kDTypeChoices = "one of F32, F16, BF16, I8, U8, I32, U32, I64, BOOL";
constexpr std::string_view kEntryShape = "an object with dtype, shape and data_offsets";

Error tensor_error(std::string_view where, std::string_view name, std::string_view problem,
                   std::string_view expected = {}, std::string_view got = {}) {
  return error_at(where, "tensor", printable(name), problem, expected, got);
}

std::string byte_count(uint64_t bytes) {
  return fmt::format("{} bytes", bytes);
}

Result<uint64_t> read_header_length(std::string_view where, std::span<const std::byte> file) {
  if (file.size() < 8)
    return error_at(where, "header", "length", "is cut short", "8 bytes", byte_count(file.size()));
  uint64_t length = 0;
  for (size_t index = 0; index < 8; ++index) length |= std::to_integer<uint64_t>(file[index]) << (8 * index);
  if (length > kMaxSafetensorsHeaderBytes)
    return error_at(where, "header", "length", "is too large",
                    fmt::format("at most {} bytes", kMaxSafetensorsHeaderBytes), byte_count(length));
  if (length > file.size() - 8)
    return error_at(where, "header", "length", "runs past the end of the file",
                    fmt::format("at most {} bytes", file.size() - 8), byte_count(length));
  return length;
}

Status read_metadata(std::string_view where, const json& value,
                     std::map<std::string, std::string>& metadata) {
  if (!value.is_object())
    return error_at(where, "header", "__metadata__", "is not an object", "an object of strings",
                    json_kind(value));
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      return error_at(where, "metadata", printable(key), "is not a string", "a string", json_kind(item));
    metadata.emplace(key, item.get<std::string>());
  }
  return {};
}

Result<DType> read_dtype(std::string_view where, std::string_view name, const json& entry) {
  auto found = entry.find("dtype");
  if (found == entry.end()) return tensor_error(where, name, "has no dtype", kDTypeChoices, "nothing");
  if (!found->is_string())
    return tensor_error(where, name, "has a dtype that is not a string", kDTypeChoices, json_kind(*found));
  auto dtype = dtype_from_safetensors(found->get_ref<const std::string&>());
  if (!dtype) return tensor_error(where, name, "has an unknown dtype", kDTypeChoices, json_excerpt(*found));
  return *dtype;
}

Result<Shape> read_shape(std::string_view where, std::string_view name, const json& entry) {
  constexpr std::string_view kExpected = "an array of non-negative integers";
  auto found = entry.find("shape");
  if (found == entry.end()) return tensor_error(where, name, "has no shape", kExpected, "nothing");
  if (!found->is_array())
    return tensor_error(where, name, "has an invalid shape", kExpected, json_excerpt(*found));
  Shape shape;
  for (const json& extent : *found) {
    bool fits = extent.is_number_unsigned() &&
                extent.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (!fits) return tensor_error(where, name, "has an invalid shape", kExpected, json_excerpt(*found));
    shape.push_back(static_cast<int64_t>(extent.get<uint64_t>()));
  }
  return shape;
}

Status read_offsets(std::string_view where, std::string_view name, const json& entry,
                    SafetensorsEntry& tensor) {
  constexpr std::string_view kExpected = "[begin, end] with integers 0 <= begin <= end";
  auto found = entry.find("data_offsets");
  if (found == entry.end()) return tensor_error(where, name, "has no data_offsets", kExpected, "nothing");
  bool pair = found->is_array() && found->size() == 2 && (*found)[0].is_number_unsigned() &&
              (*found)[1].is_number_unsigned();
  if (!pair || (*found)[0].get<uint64_t>() > (*found)[1].get<uint64_t>())
    return tensor_error(where, name, "has invalid data_offsets", kExpected, json_excerpt(*found));
  tensor.begin = (*found)[0].get<uint64_t>();
  tensor.end = (*found)[1].get<uint64_t>();
  return {};
}

// The shape's size in bytes, or nothing when it does not fit in 64 bits.
std::optional<uint64_t> shape_bytes(const Shape& shape, DType dtype) {
  uint64_t bytes = dtype_size(dtype);
  for (int64_t extent : shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(extent), &bytes)) return std::nullopt;
  return bytes;
}

Result<SafetensorsEntry> read_entry(std::string_view where, const std::string& name, const json& entry) {
  if (!entry.is_object()) return tensor_error(where, name, "is not an object", kEntryShape, json_kind(entry));
  SafetensorsEntry tensor;
  tensor.name = name;
  auto dtype = read_dtype(where, name, entry);
  if (!dtype) return dtype.error();
  tensor.dtype = *dtype;
  auto shape = read_shape(where, name, entry);
  if (!shape) return shape.error();
  tensor.shape = std::move(*shape);
  PLUMB_TRY(read_offsets(where, name, entry, tensor));
  std::string described =
      fmt::format("{} {}", shape_string(tensor.shape), dtype_safetensors_name(tensor.dtype));
  auto expected = shape_bytes(tensor.shape, tensor.dtype);
  if (!expected)
    return tensor_error(where, name, "has a shape too large to address", "at most 2^64 bytes", described);
  if (*expected != tensor.end - tensor.begin)
    return tensor_error(where, name, fmt::format("data_offsets do not match shape {}", described),
                        byte_count(*expected), byte_count(tensor.end - tensor.begin));
  return tensor;
}

Status check_spans(std::string_view where, const std::vector<SafetensorsEntry>& tensors,
                   uint64_t data_bytes) {
  for (const SafetensorsEntry& tensor : tensors)
    if (tensor.end > data_bytes)
      return tensor_error(where, tensor.name, "runs past the end of the file",
                          fmt::format("data_offsets end <= {} (the data area)", data_bytes),
                          std::to_string(tensor.end));
  std::vector<size_t> by_begin(tensors.size());
  std::iota(by_begin.begin(), by_begin.end(), size_t{0});
  std::sort(by_begin.begin(), by_begin.end(), [&](size_t a, size_t b) {
    return std::tie(tensors[a].begin, tensors[a].end, tensors[a].name) <
           std::tie(tensors[b].begin, tensors[b].end, tensors[b].name);
  });
  const SafetensorsEntry* reaching_furthest = nullptr;  // the non-empty span with the largest end so far
  for (size_t index : by_begin) {
    const SafetensorsEntry& tensor = tensors[index];
    if (tensor.begin == tensor.end) continue;  // empty spans hold no bytes to share
    if (reaching_furthest != nullptr && tensor.begin < reaching_furthest->end)
      return tensor_error(where, tensor.name,
                          fmt::format("overlaps tensor '{}'", printable(reaching_furthest->name)),
                          fmt::format("begin >= {}", reaching_furthest->end), std::to_string(tensor.begin));
    if (reaching_furthest == nullptr || tensor.end > reaching_furthest->end) reaching_furthest = &tensor;
  }
  return {};
}

}  // namespace

Result<SafetensorsHeader> parse_safetensors(std::string_view where, std::span<const std::byte> file) {
  auto length = read_header_length(where, file);
  if (!length) return length.error();
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, *length);
  std::string duplicate;
  auto root = parse_json_text(where, "header", "json", text, &duplicate);
  if (!root) return root.error();
  if (!root->is_object())
    return error_at(where, "header", "json", "is not an object", "a JSON object", json_kind(*root));
  if (!duplicate.empty())
    return tensor_error(where, duplicate, "appears twice in the header", "unique names", "a repeated key");
  SafetensorsHeader header;
  header.data_start = 8 + *length;
  for (const auto& [name, entry] : root->items()) {
    if (name == "__metadata__") {
      PLUMB_TRY(read_metadata(where, entry, header.metadata));
      continue;
    }
    auto tensor = read_entry(where, name, entry);
    if (!tensor) return tensor.error();
    header.tensors.push_back(std::move(*tensor));
  }
  PLUMB_TRY(check_spans(where, header.tensors, file.size() - header.data_start));
  return header;
}

}  // namespace plumb

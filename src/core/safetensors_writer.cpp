// Deterministic safetensors files: sorted header keys, 8-byte aligned data start, data ordered by element
// size.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/printable.hpp"
#include "core/safetensors.hpp"

namespace plumb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Status check_tensor(std::string_view where, const TensorBytes& tensor, std::set<std::string_view>& names) {
  if (tensor.name.empty() || tensor.name == "__metadata__")
    return error_at(where, "tensor", printable(tensor.name), "has a reserved name", "a non-empty tensor name",
                    fmt::format("'{}'", printable(tensor.name)));
  if (!names.insert(tensor.name).second)
    return error_at(where, "tensor", printable(tensor.name), "is given twice", "unique names",
                    "a repeated name");
  uint64_t expected = dtype_size(tensor.dtype);
  for (int64_t extent : tensor.shape) {
    if (extent < 0 || __builtin_mul_overflow(expected, static_cast<uint64_t>(extent), &expected))
      return error_at(where, "tensor", printable(tensor.name), "has an invalid shape",
                      "non-negative extents within 2^64 bytes", shape_string(tensor.shape));
  }
  if (expected != tensor.bytes.size())
    return error_at(where, "tensor", printable(tensor.name),
                    fmt::format("bytes do not match shape {} {}", shape_string(tensor.shape),
                                dtype_safetensors_name(tensor.dtype)),
                    fmt::format("{} bytes", expected), fmt::format("{} bytes", tensor.bytes.size()));
  return {};
}

Result<std::vector<std::byte>> serialize(std::string_view where, std::span<const TensorBytes> tensors,
                                         const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> names;
  for (const TensorBytes& tensor : tensors) PLUMB_TRY(check_tensor(where, tensor, names));
  // Larger elements first keeps each tensor aligned to its element size after the 8-aligned data start.
  std::vector<const TensorBytes*> layout;
  for (const TensorBytes& tensor : tensors) layout.push_back(&tensor);
  std::sort(layout.begin(), layout.end(), [](const TensorBytes* a, const TensorBytes* b) {
    size_t a_size = dtype_size(a->dtype), b_size = dtype_size(b->dtype);
    return a_size != b_size ? a_size > b_size : a->name < b->name;
  });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorBytes* tensor : layout) {
    uint64_t end = offset + tensor->bytes.size();
    header[tensor->name] = {{"dtype", std::string(dtype_safetensors_name(tensor->dtype))},
                            {"shape", tensor->shape},
                            {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::vector<std::byte> bytes;
  bytes.reserve(8 + text.size() + offset);
  for (size_t index = 0; index < 8; ++index)
    bytes.push_back(static_cast<std::byte>((uint64_t{text.size()} >> (8 * index)) & 0xff));
  for (char letter : text) bytes.push_back(static_cast<std::byte>(letter));
  for (const TensorBytes* tensor : layout)
    bytes.insert(bytes.end(), tensor->bytes.begin(), tensor->bytes.end());
  return bytes;
}

// Writes through `<path>.partial` and a rename so that a reader never sees half a file.
Status write_file(const fs::path& path, std::string_view contents) {
  fs::path partial = path;
  partial += ".partial";
  std::string where = printable(path.string(), 400);
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out)
      return error_at(where, "file", printable(path.filename().string()), "cannot be written",
                      "a writable path", std::strerror(errno));
  }
  std::error_code error;
  fs::rename(partial, path, error);
  if (error)
    return error_at(where, "file", printable(path.filename().string()), "cannot be renamed into place",
                    "a writable directory", error.message());
  return {};
}

}  // namespace

Result<std::vector<std::byte>> serialize_safetensors(std::span<const TensorBytes> tensors,
                                                     const std::map<std::string, std::string>& metadata) {
  return serialize("serialize_safetensors", tensors, metadata);
}

Status write_safetensors(const fs::path& path, std::span<const TensorBytes> tensors,
                         const std::map<std::string, std::string>& metadata) {
  auto bytes = serialize(printable(path.string(), 400), tensors, metadata);
  if (!bytes) return bytes.error();
  return write_file(path, std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
}

Status write_safetensors_index(const fs::path& path, const std::map<std::string, std::string>& weight_map,
                               uint64_t total_size) {
  json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
  return write_file(path, index.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace plumb

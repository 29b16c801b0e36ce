// Fuzzes parse_safetensors on whole files: an error must be one line naming the file; a success must satisfy
// every promise of the header independently re-checked, and must survive a write and re-read unchanged.
#include <cstdint>
#include <cstdio>
#include <span>

#include "core/safetensors.hpp"

namespace {

void require(bool holds, const char* promise) {
  if (holds) return;
  std::fprintf(stderr, "broken promise: %s\n", promise);
  __builtin_trap();
}

void check_spans(const plumb::SafetensorsHeader& header, size_t file_size) {
  uint64_t data_bytes = file_size - header.data_start;
  for (const plumb::SafetensorsEntry& entry : header.tensors) {
    require(entry.begin <= entry.end && entry.end <= data_bytes, "span inside the data area");
    unsigned __int128 bytes = plumb::dtype_size(entry.dtype);
    for (int64_t extent : entry.shape) bytes *= static_cast<uint64_t>(extent);
    require(bytes == entry.end - entry.begin, "span size equals shape x dtype size");
    for (const plumb::SafetensorsEntry& other : header.tensors) {
      bool disjoint = &other == &entry || entry.begin == entry.end || other.begin == other.end ||
                      entry.end <= other.begin || other.end <= entry.begin;
      require(disjoint, "non-empty spans do not overlap");
    }
  }
}

void check_round_trip(const plumb::SafetensorsHeader& header, std::span<const std::byte> file) {
  std::vector<plumb::TensorBytes> tensors;
  for (const plumb::SafetensorsEntry& entry : header.tensors)
    tensors.push_back({entry.name, entry.dtype, entry.shape,
                       file.subspan(header.data_start + entry.begin, entry.end - entry.begin)});
  auto written = plumb::serialize_safetensors(tensors, header.metadata);
  if (!written) {
    // The writer refuses only names it reserves, which the reader accepts as ordinary keys.
    require(written.error().message.find("reserved name") != std::string::npos,
            "writer accepts what was read");
    return;
  }
  auto reread = plumb::parse_safetensors("rewritten", *written);
  require(reread.ok(), "written file parses");
  require(reread->metadata == header.metadata, "metadata survives");
  require(reread->tensors.size() == header.tensors.size(), "tensor count survives");
  for (size_t index = 0; index < header.tensors.size(); ++index) {
    const auto& before = header.tensors[index];
    const auto& after = reread->tensors[index];
    require(before.name == after.name && before.dtype == after.dtype && before.shape == after.shape,
            "entry survives");
    auto old_bytes = file.subspan(header.data_start + before.begin, before.end - before.begin);
    auto new_bytes = std::span(*written).subspan(reread->data_start + after.begin, after.end - after.begin);
    require(std::equal(old_bytes.begin(), old_bytes.end(), new_bytes.begin(), new_bytes.end()),
            "bytes survive");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  auto header = plumb::parse_safetensors("fuzz.safetensors", file);
  if (!header) {
    const std::string& message = header.error().message;
    require(message.rfind("fuzz.safetensors: ", 0) == 0, "error names the file");
    require(message.find('\n') == std::string::npos, "error is one line");
    return 0;
  }
  require(header->data_start >= 8 && header->data_start <= size, "data area inside the file");
  check_spans(*header, size);
  check_round_trip(*header, file);
  return 0;
}

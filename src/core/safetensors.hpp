#pragma once
// safetensors checkpoints: a validating header parser, a memory-mapped reader for one file or a sharded
// `*.safetensors.index.json`, and a deterministic writer.
//
//   Result<Checkpoint> Checkpoint::open(path)   path: a .safetensors file, an index file, or a directory
//   holding
//                                               model.safetensors.index.json, model.safetensors, one
//                                               *.index.json or exactly one *.safetensors
//   checkpoint.tensors()                         every tensor, sorted by name (name, dtype, shape, file,
//   span, data) checkpoint.find(name)                        the tensor or nullptr checkpoint.total_bytes()
//   sum of the tensors' byte spans write_safetensors(path, tensors, metadata)   byte-for-byte deterministic
//   file write_safetensors_index(path, weight_map)    model.safetensors.index.json for shards written above
//
// Validation: 8-byte little-endian header length (at most kMaxSafetensorsHeaderBytes, inside the file); the
// header is a JSON object; `__metadata__` maps strings to strings; each tensor has a known dtype (F32 F16
// BF16 I8 U8 I32 U32 I64 BOOL), a shape of non-negative integers, data_offsets [begin, end] with begin <= end
// and end - begin equal to the shape's size, inside the data area, not overlapping another tensor; every
// index entry names a shard in the same directory that exists and holds that tensor; no tensor is in two
// shards. Every failure is one Error line,
// `<file>: tensor '<name>' <problem>; expected <x>, got <y>` (header-level problems name the header field
// instead).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "core/tensor.hpp"

namespace plumb {

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;

// One tensor of one file's header; offsets are relative to the data area, as stored.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t data_start = 0;  // file offset of the data area: 8 + header length
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> tensors;  // sorted by name
};

// Validates a whole file's bytes (only the header and the file size are read); `where` names the file in
// errors.
Result<SafetensorsHeader> parse_safetensors(std::string_view where, std::span<const std::byte> file);

struct CheckpointTensor {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  size_t file = 0;      // index into Checkpoint::files()
  uint64_t offset = 0;  // absolute byte offset in that file
  uint64_t bytes = 0;
  // Points into a read-only mapping owned by the Checkpoint; aligned only as far as the file aligns the
  // tensor.
  const std::byte* data = nullptr;

  // A contiguous CPU view of the mapped bytes; never write through it.
  TensorView view() const;
};

class Checkpoint {
 public:
  static Result<Checkpoint> open(const std::filesystem::path& path);

  const std::vector<std::filesystem::path>& files() const { return files_; }
  // The index file when the checkpoint is sharded, else empty.
  const std::filesystem::path& index() const { return index_; }
  bool sharded() const { return !index_.empty(); }
  const std::vector<CheckpointTensor>& tensors() const { return tensors_; }
  const CheckpointTensor* find(std::string_view name) const;
  uint64_t total_bytes() const;
  // The `__metadata__` map of files()[file].
  const std::map<std::string, std::string>& metadata(size_t file) const { return metadata_.at(file); }

 private:
  friend struct CheckpointBuilder;
  std::vector<MappedFile> mappings_;
  std::vector<std::filesystem::path> files_;
  std::vector<std::map<std::string, std::string>> metadata_;
  std::filesystem::path index_;
  std::vector<CheckpointTensor> tensors_;
};

// What the writer stores for one tensor; `bytes` must hold exactly shape x dtype size bytes.
struct TensorBytes {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::span<const std::byte> bytes;
};

// The file's bytes: header keys sorted, header padded with spaces so the data starts at a multiple of 8, data
// laid out by dtype size (largest first) then name, so every tensor is aligned to its element size.
Result<std::vector<std::byte>> serialize_safetensors(std::span<const TensorBytes> tensors,
                                                     const std::map<std::string, std::string>& metadata = {});
// Writes serialize_safetensors() to `path` through a temporary file and a rename.
Status write_safetensors(const std::filesystem::path& path, std::span<const TensorBytes> tensors,
                         const std::map<std::string, std::string>& metadata = {});
// Writes {"metadata": {"total_size": N}, "weight_map": {tensor: shard file name}} with sorted keys.
Status write_safetensors_index(const std::filesystem::path& path,
                               const std::map<std::string, std::string>& weight_map, uint64_t total_size);

}  // namespace plumb

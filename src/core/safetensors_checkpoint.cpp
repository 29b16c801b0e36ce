// Opening a checkpoint: choosing the file or index in a directory, mapping shards, checking the index against
// them.
#include <algorithm>
#include <set>

#include "core/json_text.hpp"
#include "core/printable.hpp"
#include "core/safetensors.hpp"

namespace plumb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kIndexSuffix = ".safetensors.index.json";

std::string shown(const fs::path& path) {
  return printable(path.string(), 400);
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool is_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

// Names in a directory that end with `suffix`, sorted.
std::vector<std::string> names_ending(const fs::path& dir, std::string_view suffix) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::string name = it->path().filename().string();
    if (ends_with(name, suffix) && is_file(it->path())) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The index or single file that a checkpoint directory is read from.
Result<fs::path> pick_checkpoint_file(const fs::path& dir) {
  for (const char* preferred : {"model.safetensors.index.json", "model.safetensors"})
    if (is_file(dir / preferred)) return dir / preferred;
  std::vector<std::string> indexes = names_ending(dir, kIndexSuffix);
  if (indexes.size() == 1) return dir / indexes[0];
  std::vector<std::string> files = names_ending(dir, ".safetensors");
  if (indexes.empty() && files.size() == 1) return dir / files[0];
  std::string found = fmt::format("{} index files and {} .safetensors files", indexes.size(), files.size());
  return error_at(shown(dir), "checkpoint directory", printable(dir.filename().string()),
                  "has no single checkpoint to read",
                  "model.safetensors.index.json, model.safetensors, one index or one .safetensors file",
                  found);
}

// A shard name from an index must stay inside the checkpoint directory.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

// weight_map from an index file: tensor name -> shard file name.
Result<std::map<std::string, std::string>> read_weight_map(const fs::path& index_path) {
  std::string where = shown(index_path);
  auto text = read_text_file(index_path, kMaxSafetensorsHeaderBytes);
  if (!text) return text.error();
  auto root = parse_json_text(where, "index", "json", *text);
  if (!root) return root.error();
  if (!root->is_object())
    return error_at(where, "index", "json", "is not an object", "a JSON object", json_kind(*root));
  auto found = root->find("weight_map");
  constexpr std::string_view kExpected = "an object of tensor names to shard files";
  if (found == root->end()) return error_at(where, "index", "weight_map", "is missing", kExpected, "nothing");
  if (!found->is_object())
    return error_at(where, "index", "weight_map", "is not an object", kExpected, json_kind(*found));
  std::map<std::string, std::string> weight_map;
  for (const auto& [tensor, shard] : found->items()) {
    if (!shard.is_string())
      return error_at(where, "tensor", printable(tensor), "has a shard that is not a string", "a file name",
                      json_kind(shard));
    const auto& shard_name = shard.get_ref<const std::string&>();
    if (!is_plain_file_name(shard_name))
      return error_at(where, "tensor", printable(tensor), "maps to a shard outside the checkpoint directory",
                      "a plain file name", fmt::format("'{}'", printable(shard_name)));
    weight_map.emplace(tensor, shard_name);
  }
  return weight_map;
}

}  // namespace

// Adds mapped, validated files to a Checkpoint under construction.
struct CheckpointBuilder {
  Checkpoint checkpoint;

  Status add_file(const fs::path& path) {
    auto mapped = MappedFile::open(path);
    if (!mapped) return mapped.error();
    auto header = parse_safetensors(shown(path), mapped->bytes());
    if (!header) return header.error();
    size_t file = checkpoint.files_.size();
    const std::byte* base = mapped->bytes().data();
    for (SafetensorsEntry& entry : header->tensors) {
      uint64_t offset = header->data_start + entry.begin;
      checkpoint.tensors_.push_back(CheckpointTensor{std::move(entry.name), entry.dtype,
                                                     std::move(entry.shape), file, offset,
                                                     entry.end - entry.begin, base + offset});
    }
    checkpoint.files_.push_back(path);
    checkpoint.metadata_.push_back(std::move(header->metadata));
    checkpoint.mappings_.push_back(std::move(*mapped));
    return {};
  }

  void set_index(const fs::path& index) { checkpoint.index_ = index; }

  // Sorts by name; a name in two files is an error naming the second file.
  Status finish() {
    auto& tensors = checkpoint.tensors_;
    std::stable_sort(tensors.begin(), tensors.end(),
                     [](const auto& a, const auto& b) { return a.name < b.name; });
    for (size_t index = 1; index < tensors.size(); ++index) {
      if (tensors[index].name != tensors[index - 1].name) continue;
      const CheckpointTensor& later = tensors[index];
      return error_at(shown(checkpoint.files_[later.file]), "tensor", printable(later.name),
                      fmt::format("is also in shard '{}'",
                                  printable(checkpoint.files_[tensors[index - 1].file].filename().string())),
                      "each tensor in one shard", "two shards");
    }
    return {};
  }
};

namespace {

Result<Checkpoint> open_single(const fs::path& path) {
  CheckpointBuilder builder;
  PLUMB_TRY(builder.add_file(path));
  PLUMB_TRY(builder.finish());
  return std::move(builder.checkpoint);
}

Result<Checkpoint> open_sharded(const fs::path& index_path) {
  auto weight_map = read_weight_map(index_path);
  if (!weight_map) return weight_map.error();
  fs::path dir = index_path.parent_path();
  std::string where = shown(index_path);
  std::map<std::string, std::string> first_tensor_of_shard;  // names a tensor in errors about its shard
  for (const auto& [tensor, shard] : *weight_map) first_tensor_of_shard.emplace(shard, tensor);
  for (const auto& [shard, tensor] : first_tensor_of_shard)
    if (!is_file(dir / shard))
      return error_at(where, "tensor", printable(tensor),
                      fmt::format("maps to shard '{}' that does not exist", printable(shard)),
                      fmt::format("a file at {}", shown(dir / shard)), "nothing");
  CheckpointBuilder builder;
  std::map<std::string, std::set<std::string>> names_in_shard;
  for (const auto& [shard, tensor] : first_tensor_of_shard) {
    const auto& added = builder.checkpoint.tensors();
    size_t first_added = added.size();
    PLUMB_TRY(builder.add_file(dir / shard));
    for (size_t index = first_added; index < added.size(); ++index)
      names_in_shard[shard].insert(added[index].name);
  }
  for (const auto& [tensor, shard] : *weight_map)
    if (!names_in_shard[shard].contains(tensor))
      return error_at(where, "tensor", printable(tensor),
                      fmt::format("is not in shard '{}'", printable(shard)),
                      "a tensor of that name in the shard's header", "none");
  PLUMB_TRY(builder.finish());
  builder.set_index(index_path);
  return std::move(builder.checkpoint);
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const fs::path& path) {
  std::error_code error;
  fs::file_status status = fs::status(path, error);
  fs::path chosen = path;
  if (fs::is_directory(status)) {
    auto picked = pick_checkpoint_file(path);
    if (!picked) return picked.error();
    chosen = *picked;
  } else if (!fs::is_regular_file(status)) {
    return error_at(shown(path), "checkpoint", printable(path.filename().string()), "does not exist",
                    "a .safetensors file, an index file or a directory", "nothing");
  }
  if (ends_with(chosen.filename().string(), kIndexSuffix)) return open_sharded(chosen);
  return open_single(chosen);
}

const CheckpointTensor* Checkpoint::find(std::string_view name) const {
  auto found = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const CheckpointTensor& tensor, std::string_view key) { return tensor.name < key; });
  return found != tensors_.end() && found->name == name ? &*found : nullptr;
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t total = 0;
  for (const CheckpointTensor& tensor : tensors_) total += tensor.bytes;
  return total;
}

TensorView CheckpointTensor::view() const {
  // The mapping is read-only; TensorView carries a mutable pointer for every backend's sake.
  return TensorView::contiguous(const_cast<std::byte*>(data), dtype, shape);
}

}  // namespace plumb

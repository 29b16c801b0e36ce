// The writer's exact bytes and layout, and reading back single and sharded checkpoints.
#include <gtest/gtest.h>

#include <cstring>

#include "core/safetensors.hpp"
#include "core/temp_dir.hpp"

namespace plumb {
namespace {

using testing::TempDir;

std::vector<std::byte> counting_bytes(size_t count, int start) {
  std::vector<std::byte> bytes(count);
  for (size_t index = 0; index < count; ++index)
    bytes[index] = static_cast<std::byte>((start + index) & 0xff);
  return bytes;
}

std::string as_text(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(SafetensorsWriter, WritesTheExactBytesOfTheFormat) {
  std::vector<std::byte> data = {std::byte{7}, std::byte{9}};
  std::vector<TensorBytes> tensors = {{"x", DType::u8, {2}, data}};
  auto bytes = serialize_safetensors(tensors, {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  std::string header =
      R"({"__metadata__":{"format":"pt"},"x":{"data_offsets":[0,2],"dtype":"U8","shape":[2]}})";
  header.append((8 - (8 + header.size()) % 8) % 8, ' ');
  std::string expected(8, '\0');
  expected[0] = static_cast<char>(header.size());
  expected += header + "\x07\x09";
  EXPECT_EQ(as_text(*bytes), expected);
}

TEST(SafetensorsWriter, IsDeterministicAndAlignsEveryTensor) {
  auto odd = counting_bytes(3, 1), wide = counting_bytes(16, 50), half = counting_bytes(6, 90);
  std::vector<TensorBytes> forward = {{"a.odd", DType::u8, {3}, odd},
                                      {"b.wide", DType::f32, {2, 2}, wide},
                                      {"c.half", DType::bf16, {3}, half}};
  std::vector<TensorBytes> backward(forward.rbegin(), forward.rend());
  auto first = serialize_safetensors(forward), second = serialize_safetensors(backward);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  auto header = parse_safetensors("memory", *first);
  ASSERT_TRUE(header.ok()) << header.error().message;
  EXPECT_EQ(header->data_start % 8, 0u);
  for (const SafetensorsEntry& entry : header->tensors)
    EXPECT_EQ((header->data_start + entry.begin) % dtype_size(entry.dtype), 0u)
        << entry.name << " begin " << entry.begin;
}

TEST(SafetensorsWriter, RefusesBytesThatDoNotMatchTheShape) {
  auto data = counting_bytes(10, 0);
  std::vector<TensorBytes> tensors = {{"w", DType::bf16, {2, 3}, data}};
  auto bytes = serialize_safetensors(tensors);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error().message,
            "serialize_safetensors: tensor 'w' bytes do not match shape [2, 3] BF16; expected 12 bytes, got "
            "10 bytes");
}

TEST(SafetensorsWriter, RefusesRepeatedAndReservedNames) {
  auto data = counting_bytes(1, 0);
  std::vector<TensorBytes> repeated = {{"w", DType::u8, {1}, data}, {"w", DType::u8, {1}, data}};
  EXPECT_EQ(serialize_safetensors(repeated).error().message,
            "serialize_safetensors: tensor 'w' is given twice; expected unique names, got a repeated name");
  std::vector<TensorBytes> reserved = {{"__metadata__", DType::u8, {1}, data}};
  EXPECT_FALSE(serialize_safetensors(reserved).ok());
}

TEST(SafetensorsCheckpoint, ReadsBackWhatWasWritten) {
  TempDir dir;
  auto wide = counting_bytes(24, 3), flags = counting_bytes(5, 200), scalar = counting_bytes(8, 11);
  std::vector<TensorBytes> tensors = {{"layer.weight", DType::f32, {2, 3}, wide},
                                      {"layer.mask", DType::boolean, {5}, flags},
                                      {"step", DType::i64, {}, scalar},
                                      {"empty", DType::f16, {0, 4}, {}}};
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}}).ok());
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
  EXPECT_FALSE(checkpoint->sharded());
  ASSERT_EQ(checkpoint->files().size(), 1u);
  EXPECT_EQ(checkpoint->files()[0], dir / "model.safetensors");
  EXPECT_EQ(checkpoint->metadata(0).at("format"), "pt");
  std::vector<std::string> names;
  for (const CheckpointTensor& tensor : checkpoint->tensors()) names.push_back(tensor.name);
  EXPECT_EQ(names, (std::vector<std::string>{"empty", "layer.mask", "layer.weight", "step"}));
  EXPECT_EQ(checkpoint->total_bytes(), 24u + 5u + 8u);
  for (const TensorBytes& written : tensors) {
    const CheckpointTensor* read = checkpoint->find(written.name);
    ASSERT_NE(read, nullptr) << written.name;
    EXPECT_EQ(read->dtype, written.dtype) << written.name;
    EXPECT_EQ(read->shape, written.shape) << written.name;
    ASSERT_EQ(read->bytes, written.bytes.size()) << written.name;
    EXPECT_EQ(std::memcmp(read->data, written.bytes.data(), read->bytes), 0) << written.name;
    EXPECT_EQ(read->view().bytes(), read->bytes) << written.name;
  }
  EXPECT_EQ(checkpoint->find("missing"), nullptr);
}

TEST(SafetensorsCheckpoint, ReadsAShardedCheckpointThroughItsIndex) {
  TempDir dir;
  auto first = counting_bytes(8, 0), second = counting_bytes(4, 100), third = counting_bytes(2, 7);
  std::vector<TensorBytes> shard_one = {{"a", DType::f32, {2}, first}};
  std::vector<TensorBytes> shard_two = {{"b", DType::f32, {1}, second}, {"c", DType::bf16, {1}, third}};
  ASSERT_TRUE(write_safetensors(dir / "model-00001-of-00002.safetensors", shard_one).ok());
  ASSERT_TRUE(write_safetensors(dir / "model-00002-of-00002.safetensors", shard_two).ok());
  std::map<std::string, std::string> weight_map = {{"a", "model-00001-of-00002.safetensors"},
                                                   {"b", "model-00002-of-00002.safetensors"},
                                                   {"c", "model-00002-of-00002.safetensors"}};
  ASSERT_TRUE(write_safetensors_index(dir / "model.safetensors.index.json", weight_map, 14).ok());
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
  EXPECT_TRUE(checkpoint->sharded());
  EXPECT_EQ(checkpoint->index(), dir / "model.safetensors.index.json");
  ASSERT_EQ(checkpoint->files().size(), 2u);
  EXPECT_EQ(checkpoint->tensors().size(), 3u);
  EXPECT_EQ(checkpoint->total_bytes(), 14u);
  const CheckpointTensor* c = checkpoint->find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(checkpoint->files()[c->file], dir / "model-00002-of-00002.safetensors");
  EXPECT_EQ(std::memcmp(c->data, third.data(), 2), 0);
  auto via_index = Checkpoint::open(dir / "model.safetensors.index.json");
  ASSERT_TRUE(via_index.ok()) << via_index.error().message;
  EXPECT_EQ(via_index->tensors().size(), 3u);
}

TEST(SafetensorsCheckpoint, PicksTheOnlySafetensorsFileOfADirectory) {
  TempDir dir;
  auto data = counting_bytes(1, 0);
  std::vector<TensorBytes> tensors = {{"w", DType::u8, {1}, data}};
  ASSERT_TRUE(write_safetensors(dir / "diffusion_pytorch_model.safetensors", tensors).ok());
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
  EXPECT_EQ(checkpoint->files()[0], dir / "diffusion_pytorch_model.safetensors");
  ASSERT_TRUE(write_safetensors(dir / "other.safetensors", tensors).ok());
  auto ambiguous = Checkpoint::open(dir.path());
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.error().message.find("got 0 index files and 2 .safetensors files"), std::string::npos)
      << ambiguous.error().message;
}

TEST(SafetensorsCheckpoint, NamesAPathThatDoesNotExist) {
  TempDir dir;
  auto missing = Checkpoint::open(dir / "nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            (dir / "nothing").string() +
                ": checkpoint 'nothing' does not exist; expected a .safetensors file, an "
                "index file or a directory, got nothing");
}

}  // namespace
}  // namespace plumb

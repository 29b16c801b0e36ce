// Weight loading refuses what does not fit the config, naming the tensor: a missing tensor, a wrong shape,
// packed shapes that disagree with the declared bits or group; and it lists the tensors the text model does
// not read.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "core/half.hpp"
#include "core/safetensors.hpp"
#include "models/gemma4/config.hpp"
#include "tiny_model.hpp"

namespace plumb::gemma4 {
namespace {

using testing::TempDir;

// A tiny checkpoint on disk whose tensors and config a test may rewrite before loading.
class Gemma4Weights : public ::testing::Test {
 protected:
  void write(const TinyOptions& options) {
    const Status written = write_tiny_checkpoint(dir_.path().string(), options);
    ASSERT_TRUE(written.ok()) << written.error().message;
  }

  // Rewrites model.safetensors through `edit`, which may drop, add or replace entries.
  template <class Edit>
  void edit_tensors(Edit&& edit) {
    const auto path = dir_.path() / "model.safetensors";
    std::vector<std::vector<std::byte>> copies;
    std::vector<TensorBytes> entries;
    {
      auto checkpoint = Checkpoint::open(path);
      ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
      for (const CheckpointTensor& tensor : checkpoint->tensors()) {
        copies.emplace_back(tensor.data, tensor.data + tensor.bytes);
        entries.push_back({tensor.name, tensor.dtype, tensor.shape, {}});
      }
    }
    for (size_t i = 0; i < entries.size(); ++i) entries[i].bytes = copies[i];
    edit(entries);
    const Status written = write_safetensors(path, entries);
    ASSERT_TRUE(written.ok()) << written.error().message;
  }

  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    const auto path = dir_.path() / "config.json";
    auto document = read_json_file(path.string());
    ASSERT_TRUE(document.ok());
    edit(*document);
    std::ofstream(path) << document->dump(2);
  }

  std::string load_error() {
    auto backend = cpu::make_cpu_backend(1);
    auto model = load_model(dir_.path().string(), *backend);
    return model.ok() ? std::string("(loaded)") : model.error().message;
  }

  TempDir dir_{"plumb-gemma4-weights"};
};

TEST_F(Gemma4Weights, MissingTensorIsNamed) {
  write({});
  edit_tensors([](std::vector<TensorBytes>& entries) {
    std::erase_if(entries, [](const TensorBytes& e) {
      return e.name == "model.language_model.layers.2.mlp.up_proj.weight";
    });
  });
  const std::string message = load_error();
  EXPECT_NE(message.find("tensor 'model.language_model.layers.2.mlp.up_proj.weight' is missing"),
            std::string::npos)
      << message;
}

TEST_F(Gemma4Weights, WrongShapeIsNamedWithBothShapes) {
  TinyOptions options;
  write(options);
  edit_config([](nlohmann::json& config) { config["text_config"]["intermediate_size"] = 128; });
  const std::string message = load_error();
  EXPECT_NE(
      message.find("'model.language_model.layers.0.mlp.gate_proj.weight' has the wrong shape; expected [128, "
                   "128], got [256, 128]"),
      std::string::npos)
      << message;
}

TEST_F(Gemma4Weights, PackedShapeThatDisagreesWithTheDeclaredBitsIsRefused) {
  TinyOptions options;
  options.bits = 4;
  options.group = 64;
  write(options);
  edit_config([](nlohmann::json& config) { config["quantization"]["bits"] = 8; });
  const std::string message = load_error();
  EXPECT_NE(message.find("language_model.model.embed_tokens.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("disagrees with the declared bits or group"), std::string::npos) << message;
  edit_config([](nlohmann::json& config) {
    config["quantization"]["bits"] = 4;
    config["quantization"]["group_size"] = 32;
  });
  const std::string group_message = load_error();
  EXPECT_NE(
      group_message.find("'language_model.model.embed_tokens.scales' has the wrong shape (it disagrees"),
      std::string::npos)
      << group_message;
}

TEST_F(Gemma4Weights, PerModuleEntryOverridesTheGlobalSpec) {
  TinyOptions options;
  options.bits = 4;
  write(options);
  // The file holds 4-bit down_proj; an entry claiming 8 bits for it must be checked against the packed shape.
  edit_config([](nlohmann::json& config) {
    config["quantization"]["language_model.model.layers.1.mlp.down_proj"] = {{"bits", 8}, {"group_size", 64}};
  });
  const std::string message = load_error();
  EXPECT_NE(message.find("'language_model.model.layers.1.mlp.down_proj.weight' has the wrong shape"),
            std::string::npos)
      << message;
}

TEST_F(Gemma4Weights, UnusedTensorsAreListed) {
  write({});
  const std::vector<uint16_t> extra(128 * 128, 0);
  edit_tensors([&](std::vector<TensorBytes>& entries) {
    entries.push_back({"model.embed_vision.embedding_projection.weight",
                       DType::bf16,
                       {128, 128},
                       std::as_bytes(std::span(extra))});
  });
  auto backend = cpu::make_cpu_backend(1);
  auto model = load_model(dir_.path().string(), *backend);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(model->weights.unused,
            std::vector<std::string>{"model.embed_vision.embedding_projection.weight"});
  EXPECT_EQ(model->weights.naming, Naming::hf_multimodal);
}

TEST_F(Gemma4Weights, MlxNamingAndQuantizedTiedHeadAreRecognised) {
  TinyOptions options;
  options.bits = 5;
  options.group = 32;
  write(options);
  auto backend = cpu::make_cpu_backend(1);
  auto model = load_model(dir_.path().string(), *backend);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(model->weights.naming, Naming::mlx);
  EXPECT_EQ(model->weights.embed.format, ops::Weight::Format::affine);
  EXPECT_EQ(model->weights.head.packed.data, model->weights.embed.packed.data)
      << "the tied head is the embedding";
  EXPECT_EQ(model->weights.layers[5].v_proj.out, 0) << "the global layer has no v_proj (keys as values)";
  EXPECT_TRUE(model->weights.unused.empty());
}

TEST_F(Gemma4Weights, RefusalsComeBeforeAnyWeightIsRead) {
  write({});
  // Remove every tensor: a config that asks for per-layer embeddings must be refused for that, by name.
  edit_tensors([](std::vector<TensorBytes>& entries) { entries.clear(); });
  edit_config([](nlohmann::json& config) { config["text_config"]["hidden_size_per_layer_input"] = 256; });
  const std::string message = load_error();
  EXPECT_NE(message.find("'text_config.hidden_size_per_layer_input' asks for per-layer embeddings"),
            std::string::npos)
      << message;
}

TEST_F(Gemma4Weights, ShardedCheckpointGivesTheSameLogits) {
  TinyOptions options;
  options.bits = 4;
  write(options);
  auto backend = cpu::make_cpu_backend(1);
  auto whole = load_model(dir_.path().string(), *backend);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  TempDir sharded_dir("plumb-gemma4-sharded");
  options.max_shard_bytes = 64 << 10;
  ASSERT_TRUE(write_tiny_checkpoint(sharded_dir.path().string(), options).ok());
  ASSERT_TRUE(std::filesystem::exists(sharded_dir.path() / "model.safetensors.index.json"));
  int shards = 0;
  for (const auto& entry : std::filesystem::directory_iterator(sharded_dir.path()))
    shards += entry.path().filename().string().starts_with("model-0000");
  EXPECT_GT(shards, 4) << "the tiny 4-bit model (560 KiB) in shards of at most 64 KiB";
  auto sharded = load_model(sharded_dir.path().string(), *backend);
  ASSERT_TRUE(sharded.ok()) << sharded.error().message;
  const std::vector<int32_t> tokens = {2, 400, 401, 402, 403, 404, 405, 406, 407, 408};
  auto expected = score(*whole, tokens), got = score(*sharded, tokens);
  ASSERT_TRUE(expected.ok() && got.ok());
  testing::expect_same_bits(expected->values, got->values, "sharded checkpoint");
}

// The same bf16 values stored as f32 or f16 (the tiny weights are all exact in f16) give the same logits bit
// for bit: products of bf16 activations with these weights are exact in fp32 whatever their storage.
TEST_F(Gemma4Weights, Float32AndFloat16CheckpointsLoad) {
  write({});
  auto backend = cpu::make_cpu_backend(1);
  auto reference = load_model(dir_.path().string(), *backend);
  ASSERT_TRUE(reference.ok());
  const std::vector<int32_t> tokens = {2, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410};
  auto expected = score(*reference, tokens);
  ASSERT_TRUE(expected.ok());
  for (DType stored : {DType::f32, DType::f16}) {
    TempDir converted("plumb-gemma4-float");
    std::filesystem::copy(dir_.path(), converted.path(), std::filesystem::copy_options::recursive);
    std::vector<std::vector<std::byte>> buffers;
    std::vector<TensorBytes> entries;
    for (const CheckpointTensor& tensor : reference->weights.checkpoint->tensors()) {
      const auto* bits = reinterpret_cast<const uint16_t*>(tensor.data);
      std::vector<std::byte> bytes(static_cast<size_t>(shape_elements(tensor.shape)) * dtype_size(stored));
      for (int64_t i = 0; i < shape_elements(tensor.shape); ++i) {
        const float value = bf16_to_f32(bits[i]);
        if (stored == DType::f32) std::memcpy(bytes.data() + i * 4, &value, 4);
        const uint16_t half = f32_to_f16(value);
        if (stored == DType::f16) std::memcpy(bytes.data() + i * 2, &half, 2);
      }
      buffers.push_back(std::move(bytes));
      entries.push_back({tensor.name, stored, tensor.shape, buffers.back()});
    }
    ASSERT_TRUE(write_safetensors(converted.path() / "model.safetensors", entries).ok());
    auto model = load_model(converted.path().string(), *backend);
    ASSERT_TRUE(model.ok()) << model.error().message;
    auto got = score(*model, tokens);
    ASSERT_TRUE(got.ok()) << got.error().message;
    if (stored == DType::f32) {
      testing::expect_same_bits(expected->values, got->values, "f32 checkpoint");
      continue;
    }
    double largest = 0.0;
    for (size_t i = 0; i < got->values.size(); ++i)
      largest = std::max(largest, std::fabs(static_cast<double>(got->values[i]) - expected->values[i]));
    EXPECT_LT(largest, 0.05) << "f16 checkpoint logits against the bf16 checkpoint's";
  }
}

TEST(Gemma4Geometry, RealGeometriesDeclareTheShapesOfThe12bAnd31b) {
  auto twelve = geometry_options("12b");
  ASSERT_TRUE(twelve.ok());
  auto config = parse_config(tiny_config_json(*twelve), "12b");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->model_type, "gemma4_unified");
  EXPECT_EQ(config->layer_count(), 48);
  EXPECT_EQ(config->vocab, 262144);
  EXPECT_EQ(config->layers[5].kind, LayerKind::full);
  EXPECT_EQ(config->layers[5].head_dim, 512);
  EXPECT_EQ(config->layers[5].kv_heads, 1);
  EXPECT_EQ(config->layers[4].kv_heads, 8);
  EXPECT_EQ(config->layers[4].window, 1024);
  auto thirty_one = geometry_options("31b");
  ASSERT_TRUE(thirty_one.ok());
  auto config31 = parse_config(tiny_config_json(*thirty_one), "31b");
  ASSERT_TRUE(config31.ok()) << config31.error().message;
  EXPECT_EQ(config31->model_type, "gemma4");
  EXPECT_EQ(config31->layer_count(), 60);
  EXPECT_EQ(config31->hidden, 5376);
  EXPECT_EQ(config31->layers[59].kv_heads, 4);
  EXPECT_EQ(config31->layers[0].heads * config31->layers[0].head_dim, 8192);
  EXPECT_FALSE(geometry_options("13b").ok());
}

}  // namespace
}  // namespace plumb::gemma4

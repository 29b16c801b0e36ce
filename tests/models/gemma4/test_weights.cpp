// Weight loading refuses what does not fit the config, naming the tensor: a missing tensor, a wrong shape,
// packed shapes that disagree with the declared bits or group; and it lists the tensors the text model does
// not read.
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace plumb::gemma4

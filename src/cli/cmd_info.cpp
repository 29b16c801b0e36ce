// `plumb info MODEL`: family, format, dtypes, geometry, tensor count and bytes, from config.json and the
// safetensors headers only (no tensor data is read).
#include <exception>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "core/config.hpp"
#include "core/hf_cache.hpp"
#include "core/printable.hpp"
#include "core/safetensors.hpp"

namespace plumb::cli {
namespace {

namespace fs = std::filesystem;

struct GeometryField {
  std::string_view key;
  std::string_view label;
};

constexpr GeometryField kTextGeometry[] = {
    {"hidden_size", "hidden"},
    {"num_hidden_layers", "layers"},
    {"num_attention_heads", "heads"},
    {"num_key_value_heads", "kv heads"},
    {"num_global_key_value_heads", "global kv heads"},
    {"head_dim", "head dim"},
    {"global_head_dim", "global head dim"},
    {"intermediate_size", "mlp"},
    {"vocab_size", "vocab"},
};
constexpr GeometryField kVisionGeometry[] = {
    {"hidden_size", "hidden"}, {"num_hidden_layers", "layers"}, {"num_attention_heads", "heads"},
    {"head_dim", "head dim"},  {"intermediate_size", "mlp"},    {"patch_size", "patch"},
    {"image_size", "image"},
};

std::string counted(size_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

std::string row(std::string_view label, std::string_view text) {
  return fmt::format("{:<10}{}", label, text);
}

Result<std::string> family_text(const Config& config) {
  auto family = config.string_or("model_type", "unknown (config.json has no model_type)");
  if (!family) return family.error();
  std::vector<std::string> parts;
  for (std::string_view nested : {"text_config", "vision_config", "audio_config"}) {
    if (!config.has_object(nested)) continue;
    auto sub = config.sub(nested);
    auto type = sub->string_or("model_type", "");
    if (!type) return type.error();
    if (!type->empty())
      parts.push_back(fmt::format("{} {}", nested.substr(0, nested.find('_')), printable(*type)));
  }
  if (parts.empty()) return printable(*family);
  return fmt::format("{} ({})", printable(*family), fmt::join(parts, ", "));
}

// MLX affine when `quantization` (or its legacy copy `quantization_config`) carries bits and group_size.
Result<std::string> quantization_text(const Config& config) {
  for (std::string_view field : {"quantization", "quantization_config"}) {
    if (!config.has_object(field)) continue;
    auto block = config.sub(field);
    if (!block->has("bits") && !block->has("group_size")) {
      auto method = block->string_or("quant_method", "");
      if (!method) return method.error();
      if (!method->empty()) return fmt::format("quantized ({})", printable(*method));
      continue;
    }
    auto bits = block->integer("bits");
    if (!bits) return bits.error();
    auto group = block->integer("group_size");
    if (!group) return group.error();
    auto mode = block->string_or("mode", "affine");
    if (!mode) return mode.error();
    size_t overrides = 0;
    for (const auto& [key, value] : block->json().items())
      overrides += value.is_object() || value.is_boolean();
    std::string text = fmt::format("MLX {} {}-bit, group {}", printable(*mode), *bits, *group);
    if (overrides > 0) text += fmt::format(", {}", counted(overrides, "per-module override"));
    return text;
  }
  return std::string();
}

std::string format_text(const Checkpoint& checkpoint, const std::string& quantization) {
  size_t files = checkpoint.files().size();
  std::string text = checkpoint.sharded() ? fmt::format("safetensors, sharded in {} files ({})", files,
                                                        printable(checkpoint.index().filename().string()))
                                          : fmt::format("safetensors, 1 file ({})",
                                                        printable(checkpoint.files()[0].filename().string()));
  if (!quantization.empty()) text += "; " + quantization;
  return text;
}

std::string dtypes_text(const Checkpoint& checkpoint) {
  std::map<DType, std::pair<size_t, uint64_t>> by_dtype;  // dtype -> (tensors, bytes)
  for (const CheckpointTensor& tensor : checkpoint.tensors()) {
    by_dtype[tensor.dtype].first += 1;
    by_dtype[tensor.dtype].second += tensor.bytes;
  }
  std::vector<std::string> parts;
  for (const auto& [dtype, totals] : by_dtype)
    parts.push_back(fmt::format("{} {} {}", dtype_name(dtype), counted(totals.first, "tensor"),
                                human_bytes(totals.second)));
  return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, ", "));
}

// The fields present in `config`, then in `fallback` (the top level, for fields a nested config leaves out).
Result<std::string> geometry_text(const Config& config, const Config* fallback,
                                  std::span<const GeometryField> fields) {
  std::vector<std::string> parts;
  for (const GeometryField& field : fields) {
    const Config* source = config.has(field.key) ? &config : fallback;
    if (source == nullptr || !source->has(field.key)) continue;
    auto value = source->integer(field.key);
    if (!value) return value.error();
    parts.push_back(fmt::format("{} {}", field.label, *value));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

Result<std::vector<std::string>> geometry_rows(const Config& config) {
  std::vector<std::string> rows;
  bool nested = config.has_object("text_config");
  auto text_config = nested ? config.sub("text_config") : Result<Config>(config);
  if (!text_config) return text_config.error();
  auto text = geometry_text(*text_config, nested ? &config : nullptr, kTextGeometry);
  if (!text) return text.error();
  if (!text->empty()) rows.push_back(row("text", *text));
  if (config.has_object("vision_config")) {
    auto vision = geometry_text(config.sub("vision_config").value(), nullptr, kVisionGeometry);
    if (!vision) return vision.error();
    if (!vision->empty()) rows.push_back(row("vision", *vision));
  }
  return rows;
}

// config.json beside the weights, when the model is a directory that has one.
Result<std::optional<Config>> load_config(const fs::path& model_path) {
  std::error_code error;
  if (!fs::is_directory(model_path, error) || !fs::exists(model_path / "config.json", error))
    return std::optional<Config>();
  auto loaded = Config::load(model_path / "config.json");
  if (!loaded) return loaded.error();
  return std::optional<Config>(std::move(*loaded));
}

Result<std::vector<std::string>> describe(const std::string& model_text) {
  auto model = resolve_model(model_text);
  if (!model) return model.error();
  auto checkpoint = Checkpoint::open(model->path);
  if (!checkpoint) return checkpoint.error();
  auto config = load_config(model->path);
  if (!config) return config.error();
  std::string family = "unknown (no config.json)", quantization;
  std::vector<std::string> geometry;
  if (config->has_value()) {
    auto named = family_text(**config);
    if (!named) return named.error();
    auto quantized = quantization_text(**config);
    if (!quantized) return quantized.error();
    auto rows = geometry_rows(**config);
    if (!rows) return rows.error();
    family = *named;
    quantization = *quantized;
    geometry = *rows;
  }
  std::string where = printable(model->path.string(), 400);
  if (!model->repo.empty())
    where += fmt::format(" ({}@{}, commit {})", model->repo, printable(model->revision), model->commit);
  uint64_t total = checkpoint->total_bytes();
  std::vector<std::string> lines = {row("model", where), row("family", family),
                                    row("format", format_text(*checkpoint, quantization)),
                                    row("dtypes", dtypes_text(*checkpoint))};
  lines.insert(lines.end(), geometry.begin(), geometry.end());
  lines.push_back(
      row("tensors", fmt::format("{}, {} ({} bytes)", counted(checkpoint->tensors().size(), "tensor"),
                                 human_bytes(total), total)));
  return lines;
}

int run_info(const std::string& model) {
  try {
    auto lines = describe(model);
    if (!lines) return report_bad_input("info", lines.error().message);
    for (const std::string& line : *lines) fmt::print("{}\n", line);
    return kExitOk;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "plumb info: internal error: %s\n", printable(error.what()).c_str());
    return kExitFailure;
  }
}

const RegisterCommand kInfo{
    {"info", "Describe a checkpoint from its config.json and safetensors headers",
     [](CLI::App& command) -> CommandRun {
       auto model = std::make_shared<std::string>();
       command.add_option("MODEL", *model, "local directory or file, or org/name[@revision]")->required();
       return [model] { return run_info(*model); };
     }}};

}  // namespace
}  // namespace plumb::cli

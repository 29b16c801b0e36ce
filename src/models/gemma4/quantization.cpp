#include "models/gemma4/quantization.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/half.hpp"

namespace plumb::gemma4 {

namespace {

constexpr AffineSpec kModuleDefaults{4, 64};

Result<AffineSpec> affine_spec(const FieldReader& block, AffineSpec fallback) {
  PLUMB_TRY_ASSIGN(mode, block.string("mode", "affine"));
  if (mode != "affine")
    return error_at(block.where(), "field", block.name("mode"),
                    "asks for a quantization mode that is not built", "affine", mode);
  PLUMB_TRY_ASSIGN(bits, block.integer("bits", fallback.bits));
  PLUMB_TRY_ASSIGN(group, block.integer("group_size", fallback.group));
  if (!affine_bits_supported(static_cast<int>(bits)))
    return error_at(block.where(), "field", block.name("bits"), "is not an affine bit width",
                    "2, 3, 4, 5, 6 or 8", std::to_string(bits));
  if (!affine_group_supported(static_cast<int>(group)))
    return error_at(block.where(), "field", block.name("group_size"), "is not an affine group size",
                    "32, 64 or 128", std::to_string(group));
  return AffineSpec{static_cast<int>(bits), static_cast<int>(group)};
}

bool is_global_key(const std::string& key) {
  return key == "bits" || key == "group_size" || key == "mode";
}

}  // namespace

bool affine_bits_supported(int bits) {
  return bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
}

bool affine_group_supported(int group) {
  return group == 32 || group == 64 || group == 128;
}

int64_t packed_words(int64_t in, int bits) {
  return in * bits / 32;
}

Result<Quantization> parse_quantization(const FieldReader& root) {
  Quantization quantization;
  const char* key = root.has("quantization") ? "quantization" : "quantization_config";
  if (!root.has(key) || root.is_null(key)) return quantization;
  PLUMB_TRY_ASSIGN(block, root.object(key));
  if (block.has("quant_method")) {
    PLUMB_TRY_ASSIGN(method, block.string("quant_method", ""));
    return error_at(block.where(), "field", block.name("quant_method"),
                    "asks for a quantization method that is not built", "MLX affine (no quant_method)",
                    method);
  }
  quantization.present = true;
  PLUMB_TRY_ASSIGN(defaults, affine_spec(block, kModuleDefaults));
  quantization.defaults = defaults;
  for (const std::string& module : block.keys()) {
    if (is_global_key(module)) continue;
    auto as_bool = block.boolean(module, false);
    if (as_bool.ok() && block.has(module)) {
      quantization.modules[module] = *as_bool ? std::optional<AffineSpec>(defaults) : std::nullopt;
      continue;
    }
    auto entry = block.object(module);
    if (!entry.ok())
      return error_at(block.where(), "field", block.name(module), "is not a module's quantization",
                      "true, false or an object with bits and group_size", "another value");
    if (entry->keys().empty()) {
      quantization.modules[module] = std::nullopt;
      continue;
    }
    PLUMB_TRY_ASSIGN(spec, affine_spec(*entry, kModuleDefaults));
    quantization.modules[module] = spec;
  }
  return quantization;
}

const std::optional<AffineSpec>* module_entry(const Quantization& quantization, const std::string& module) {
  const auto found = quantization.modules.find(module);
  return found == quantization.modules.end() ? nullptr : &found->second;
}

uint32_t unpack_element(std::span<const uint32_t> words, int bits, int64_t index) {
  const uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  const size_t word = bit / 32;
  const unsigned shift = bit % 32;
  uint64_t window = words[word];
  if (shift + static_cast<unsigned>(bits) > 32) window |= static_cast<uint64_t>(words[word + 1]) << 32;
  return static_cast<uint32_t>((window >> shift) & ((1u << bits) - 1u));
}

void pack_row(std::span<const uint8_t> values, int bits, std::span<uint32_t> words) {
  std::fill(words.begin(), words.end(), 0u);
  for (size_t index = 0; index < values.size(); ++index) {
    const uint64_t bit = index * static_cast<uint64_t>(bits);
    const uint64_t shifted = static_cast<uint64_t>(values[index]) << (bit % 32);
    words[bit / 32] |= static_cast<uint32_t>(shifted);
    if (shifted >> 32) words[bit / 32 + 1] |= static_cast<uint32_t>(shifted >> 32);
  }
}

void quantize_row(std::span<const float> row, int bits, int group, std::span<uint32_t> words,
                  std::span<uint16_t> scales, std::span<uint16_t> biases) {
  const float levels = static_cast<float>((1 << bits) - 1);
  std::vector<uint8_t> values(row.size());
  for (size_t start = 0, g = 0; start < row.size(); start += static_cast<size_t>(group), ++g) {
    const auto members = row.subspan(start, static_cast<size_t>(group));
    float low = std::numeric_limits<float>::max(), high = 0.0f;
    for (float w : members) low = std::min(low, w), high = std::max(high, w);
    float scale = std::max((high - low) / levels, 1e-7f);
    const bool low_edge = std::fabs(low) > std::fabs(high);
    scale = low_edge ? scale : -scale;
    const float edge = low_edge ? low : high;
    const float level0 = std::round(edge / scale);
    const bool at_zero = level0 == 0.0f;
    scale = at_zero ? scale : edge / level0;
    const float bias = at_zero ? 0.0f : edge;
    scales[g] = f32_to_bf16(scale);
    biases[g] = f32_to_bf16(bias);
    for (size_t i = 0; i < members.size(); ++i)
      values[start + i] =
          static_cast<uint8_t>(std::clamp(std::round((members[i] - bias) / scale), 0.0f, levels));
  }
  pack_row(values, bits, words);
}

uint16_t dequantize_element(uint32_t q, uint16_t scale, uint16_t bias) {
  return f32_to_bf16(bf16_to_f32(scale) * static_cast<float>(q) + bf16_to_f32(bias));
}

}  // namespace plumb::gemma4

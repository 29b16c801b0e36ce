#include "models/gemma4/quantization.hpp"

#include <fmt/format.h>

#include "models/gemma4/try_assign.hpp"
#include "ops/affine.hpp"

namespace plumb::gemma4 {

namespace {

constexpr AffineSpec kModuleDefaults{4, 64};

Result<AffineSpec> affine_spec(const Fields& block, AffineSpec fallback) {
  PLUMB_TRY_ASSIGN(mode, block.string_or("mode", "affine"));
  if (mode != "affine")
    return error_at(block.where(), "field", block.field_name("mode"),
                    "asks for a quantization mode that is not built", "affine", mode);
  PLUMB_TRY_ASSIGN(bits, block.integer_or("bits", fallback.bits));
  PLUMB_TRY_ASSIGN(group, block.integer_or("group_size", fallback.group));
  if (!ops::affine_bits_supported(static_cast<int>(bits)))
    return error_at(block.where(), "field", block.field_name("bits"), "is not an affine bit width",
                    "2, 3, 4, 5, 6 or 8", std::to_string(bits));
  if (!ops::affine_group_supported(static_cast<int>(group)))
    return error_at(block.where(), "field", block.field_name("group_size"), "is not an affine group size",
                    "32, 64 or 128", std::to_string(group));
  return AffineSpec{static_cast<int>(bits), static_cast<int>(group)};
}

bool is_global_key(const std::string& key) {
  return key == "bits" || key == "group_size" || key == "mode";
}

}  // namespace

Result<Quantization> parse_quantization(const Fields& root) {
  Quantization quantization;
  // A "quantization" key, even null, hides "quantization_config".
  const char* key = root.json().contains("quantization") ? "quantization" : "quantization_config";
  if (!root.has(key)) return quantization;
  PLUMB_TRY_ASSIGN(block, root.sub(key));
  if (block.json().contains("quant_method")) {
    PLUMB_TRY_ASSIGN(method, block.string_or("quant_method", ""));
    return error_at(block.where(), "field", block.field_name("quant_method"),
                    "asks for a quantization method that is not built", "MLX affine (no quant_method)",
                    method);
  }
  quantization.present = true;
  PLUMB_TRY_ASSIGN(defaults, affine_spec(block, kModuleDefaults));
  quantization.defaults = defaults;
  for (const auto& [module, value] : block.json().items()) {
    if (is_global_key(module)) continue;
    if (value.is_boolean() || value.is_null()) {
      const bool quantized = value.is_boolean() && value.get<bool>();
      quantization.modules[module] = quantized ? std::optional<AffineSpec>(defaults) : std::nullopt;
      continue;
    }
    if (!value.is_object())
      return error_at(block.where(), "field", block.field_name(module), "is not a module's quantization",
                      "true, false or an object with bits and group_size", "another value");
    PLUMB_TRY_ASSIGN(entry, block.sub(module));
    if (value.empty()) {
      quantization.modules[module] = std::nullopt;
      continue;
    }
    PLUMB_TRY_ASSIGN(spec, affine_spec(entry, kModuleDefaults));
    quantization.modules[module] = spec;
  }
  return quantization;
}

const std::optional<AffineSpec>* module_entry(const Quantization& quantization, const std::string& module) {
  const auto found = quantization.modules.find(module);
  return found == quantization.modules.end() ? nullptr : &found->second;
}

}  // namespace plumb::gemma4

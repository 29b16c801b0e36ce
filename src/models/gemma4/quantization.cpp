#include "models/gemma4/quantization.hpp"

#include <fmt/format.h>

#include "ops/affine.hpp"

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
  if (!ops::affine_bits_supported(static_cast<int>(bits)))
    return error_at(block.where(), "field", block.name("bits"), "is not an affine bit width",
                    "2, 3, 4, 5, 6 or 8", std::to_string(bits));
  if (!ops::affine_group_supported(static_cast<int>(group)))
    return error_at(block.where(), "field", block.name("group_size"), "is not an affine group size",
                    "32, 64 or 128", std::to_string(group));
  return AffineSpec{static_cast<int>(bits), static_cast<int>(group)};
}

bool is_global_key(const std::string& key) {
  return key == "bits" || key == "group_size" || key == "mode";
}

}  // namespace

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

}  // namespace plumb::gemma4

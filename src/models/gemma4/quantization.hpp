#pragma once
// The MLX affine quantization block of config.json (the packed layout itself is in ops/affine.hpp).
#include <optional>
#include <string>

#include "core/error.hpp"
#include "models/gemma4/config.hpp"

namespace plumb::gemma4 {

// Reads `quantization` (before the legacy `quantization_config`) from the top level of config.json. A
// per-module object uses its own defaults (bits 4, group 64) for what it leaves out; true inherits the global
// spec; false or {} means unquantized.
Result<Quantization> parse_quantization(const Fields& root);

// The spec a module's entry decides, if it has one; `module` is the tensor name without ".weight".
const std::optional<AffineSpec>* module_entry(const Quantization& quantization, const std::string& module);

}  // namespace plumb::gemma4

#pragma once
// MLX affine quantization: the config.json block, and the packed layout (each row a little-endian bit stream,
// element j at bits [j*bits, (j+1)*bits), LSB first; scales and biases per group of `group` inputs).
#include <cstdint>
#include <span>

#include "core/error.hpp"
#include "models/gemma4/config.hpp"
#include "models/gemma4/config_fields.hpp"

namespace plumb::gemma4 {

bool affine_bits_supported(int bits);    // 2, 3, 4, 5, 6, 8
bool affine_group_supported(int group);  // 32, 64, 128

// u32 words per packed row of `in` elements; `in` must make whole words (in * bits % 32 == 0).
int64_t packed_words(int64_t in, int bits);

// Reads `quantization` (before the legacy `quantization_config`) from the top level of config.json. A
// per-module object uses its own defaults (bits 4, group 64) for what it leaves out; true inherits the global
// spec; false or {} means unquantized.
Result<Quantization> parse_quantization(const FieldReader& root);

// The spec a module's entry decides, if it has one; `module` is the tensor name without ".weight".
const std::optional<AffineSpec>* module_entry(const Quantization& quantization, const std::string& module);

// Element `index` of a packed row.
uint32_t unpack_element(std::span<const uint32_t> words, int bits, int64_t index);

// Packs values (each below 2^bits) into a row of words (zeroed first).
void pack_row(std::span<const uint8_t> values, int bits, std::span<uint32_t> words);

// MLX's affine quantizer for one row: per group, scale = max((max - min) / (2^bits - 1), 1e-7) with max taken
// from 0 upward; the edge of larger magnitude becomes the bias and is kept exact (scale = edge / round(edge /
// scale)) unless it rounds to level 0; q = min(round((w - bias) / scale), 2^bits - 1). Scales and biases are
// stored as bf16 bits.
void quantize_row(std::span<const float> row, int bits, int group, std::span<uint32_t> words,
                  std::span<uint16_t> scales, std::span<uint16_t> biases);

// The dequantized value the ops use: bf16(f32(scale * q) + bias), as bf16 bits.
uint16_t dequantize_element(uint32_t q, uint16_t scale, uint16_t bias);

}  // namespace plumb::gemma4

#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace plumb {

enum class DType : uint8_t { f32, f16, bf16, i8, u8, i32, u32, i64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i8,     DType::u8,
                                       DType::i32, DType::u32, DType::i64,  DType::boolean};

size_t dtype_size(DType dtype);
// Lower-case name used in messages and the CLI ("bf16").
std::string_view dtype_name(DType dtype);
// The safetensors header spelling ("BF16").
std::string_view dtype_safetensors_name(DType dtype);
std::optional<DType> dtype_from_safetensors(std::string_view name);
bool dtype_is_float(DType dtype);

}  // namespace plumb

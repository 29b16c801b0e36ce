#include "core/dtype.hpp"

namespace plumb {

namespace {
struct DTypeInfo {
  DType dtype;
  size_t size;
  std::string_view name;
  std::string_view safetensors;
  bool is_float;
};

constexpr DTypeInfo kInfo[] = {
    {DType::f32, 4, "f32", "F32", true},        {DType::f16, 2, "f16", "F16", true},
    {DType::bf16, 2, "bf16", "BF16", true},     {DType::i8, 1, "i8", "I8", false},
    {DType::u8, 1, "u8", "U8", false},          {DType::i32, 4, "i32", "I32", false},
    {DType::u32, 4, "u32", "U32", false},       {DType::i64, 8, "i64", "I64", false},
    {DType::boolean, 1, "bool", "BOOL", false},
};

const DTypeInfo& info(DType dtype) {
  return kInfo[static_cast<size_t>(dtype)];
}
}  // namespace

size_t dtype_size(DType dtype) {
  return info(dtype).size;
}
std::string_view dtype_name(DType dtype) {
  return info(dtype).name;
}
std::string_view dtype_safetensors_name(DType dtype) {
  return info(dtype).safetensors;
}
bool dtype_is_float(DType dtype) {
  return info(dtype).is_float;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const DTypeInfo& entry : kInfo)
    if (entry.safetensors == name) return entry.dtype;
  return std::nullopt;
}

}  // namespace plumb

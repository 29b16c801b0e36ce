#include <gtest/gtest.h>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace plumb {
namespace {

TEST(DType, SafetensorsNamesRoundTrip) {
  for (DType dtype : kAllDTypes) {
    auto parsed = dtype_from_safetensors(dtype_safetensors_name(dtype));
    ASSERT_TRUE(parsed.has_value()) << dtype_name(dtype);
    EXPECT_EQ(*parsed, dtype);
  }
  EXPECT_FALSE(dtype_from_safetensors("bf16").has_value());
  EXPECT_FALSE(dtype_from_safetensors("Q4_K").has_value());
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_size(DType::boolean), 1u);
}

TEST(Tensor, ContiguousViewAndBuffer) {
  HostTensor tensor(DType::f32, {2, 3, 4});
  EXPECT_EQ(tensor.view.strides, (Shape{12, 4, 1}));
  EXPECT_EQ(tensor.view.bytes(), 96u);
  EXPECT_TRUE(tensor.view.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.view.data) % 64, 0u);
  EXPECT_EQ(tensor.view.dim(-1), 4);
  EXPECT_EQ(shape_string(tensor.view.shape), "[2, 3, 4]");
  TensorView transposed = tensor.view;
  std::swap(transposed.shape[1], transposed.shape[2]);
  std::swap(transposed.strides[1], transposed.strides[2]);
  EXPECT_FALSE(transposed.is_contiguous());
}

TEST(Error, MessageShape) {
  Error error = error_at("safetensors", "tensor", "w", "has a span past the end", "<= 10", "12");
  EXPECT_EQ(error.message, "safetensors: tensor 'w' has a span past the end; expected <= 10, got 12");
  Result<int> failed = error;
  EXPECT_FALSE(failed.ok());
  Result<int> passed = 3;
  EXPECT_EQ(*passed, 3);
}

}  // namespace
}  // namespace plumb

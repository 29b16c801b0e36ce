#include "core/tensor.hpp"

#include <cstdlib>
#include <new>

#include <fmt/format.h>

namespace plumb {

std::string device_name(Device device) {
  return device.kind == DeviceKind::cpu ? std::string("cpu") : fmt::format("cuda:{}", device.index);
}

int64_t shape_elements(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

Shape contiguous_strides(std::span<const int64_t> shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t axis = shape.size(); axis-- > 0;) {
    strides[axis] = stride;
    stride *= shape[axis];
  }
  return strides;
}

std::string shape_string(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

TensorView TensorView::contiguous(void* data, DType dtype, Shape shape, Device device) {
  TensorView view;
  view.dtype = dtype;
  view.strides = contiguous_strides(shape);
  view.shape = std::move(shape);
  view.device = device;
  view.data = data;
  return view;
}

bool TensorView::is_contiguous() const {
  return strides == contiguous_strides(shape);
}

void Buffer::Free::operator()(void* pointer) const {
  std::free(pointer);
}

Buffer::Buffer(size_t bytes) : bytes_(bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* pointer = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (pointer == nullptr) throw std::bad_alloc();
  storage_.reset(pointer);
}

HostTensor::HostTensor(DType dtype, Shape shape)
    : buffer(static_cast<size_t>(shape_elements(shape)) * dtype_size(dtype)),
      view(TensorView::contiguous(nullptr, dtype, std::move(shape))) {
  view.data = buffer.data();
}

}  // namespace plumb

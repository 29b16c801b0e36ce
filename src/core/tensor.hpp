#pragma once
// A tensor view (dtype, shape, strides in elements, device, data) and an owning host buffer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace plumb {

enum class DeviceKind : uint8_t { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
};

std::string device_name(Device device);

using Shape = std::vector<int64_t>;

int64_t shape_elements(std::span<const int64_t> shape);
Shape contiguous_strides(std::span<const int64_t> shape);
std::string shape_string(std::span<const int64_t> shape);

struct TensorView {
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;
  Device device;
  void* data = nullptr;

  static TensorView contiguous(void* data, DType dtype, Shape shape, Device device = {});

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t dim(int axis) const { return shape.at(static_cast<size_t>(axis < 0 ? axis + rank() : axis)); }
  int64_t elements() const { return shape_elements(shape); }
  size_t bytes() const { return static_cast<size_t>(elements()) * dtype_size(dtype); }
  bool is_contiguous() const;
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// Owning, 64-byte aligned host memory.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes);
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  void* data() const { return storage_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* pointer) const;
  };
  std::unique_ptr<void, Free> storage_;
  size_t bytes_ = 0;
};

// A contiguous host tensor that owns its memory.
struct HostTensor {
  Buffer buffer;
  TensorView view;

  HostTensor() = default;
  HostTensor(DType dtype, Shape shape);
  template <class T>
  T* as() const {
    return view.as<T>();
  }
};

}  // namespace plumb

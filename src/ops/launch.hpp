#pragma once
// Helpers the op entries share to turn validated views into launch structs.
#include <cstdint>

#include "core/tensor.hpp"
#include "ops/backend.hpp"
#include "ops/ops.hpp"

namespace plumb::ops {

inline WeightLaunch weight_launch(const Weight& weight) {
  WeightLaunch launch;
  launch.affine = weight.format == Weight::Format::affine;
  launch.out = weight.out;
  launch.in = weight.in;
  if (launch.affine) {
    launch.packed = weight.packed.as<const uint32_t>();
    launch.scales = weight.scales.as<const uint16_t>();
    launch.biases = weight.biases.as<const uint16_t>();
    launch.bits = weight.bits;
    launch.group = weight.group;
    launch.decode_layout = weight.decode_layout.data;
  } else {
    launch.dense_dtype = weight.dense.dtype;
    launch.dense = weight.dense.data;
  }
  return launch;
}

inline const uint16_t* bf16_data(const TensorView& view) {
  return view.as<const uint16_t>();
}
inline uint16_t* bf16_out(const TensorView& view) {
  return view.as<uint16_t>();
}
inline int64_t row_stride(const TensorView& view) {
  return view.strides.empty() ? 1 : view.strides[0];
}
// Whether the CPU can read this view's memory now (the entry then checks ids and positions by value).
inline bool host_readable(const TensorView& view) {
  return view.device.kind == DeviceKind::cpu;
}

}  // namespace plumb::ops

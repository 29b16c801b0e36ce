#pragma once
// Helpers the op entries share to turn validated views into launch structs.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

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

// matmul_group's checks and its members' launches (ops_math.cpp).
Result<std::vector<MatmulLaunch>> matmul_group_launches(std::string_view where, Device device,
                                                        const TensorView& x,
                                                        std::span<const MatmulMember> members);

// A kv_write's launch and the segment table it points into.
struct KvWritePlan {
  std::vector<KvWriteSegmentLaunch> segments;
  KvWriteLaunch launch{};
};
// head_norms' checks and launch (ops_rows.cpp); with segments, its cache writes too. The launch points into
// the plan, which must stay where it is.
struct HeadNormsPlan {
  std::vector<float> inv_freq;
  KvWritePlan cache;
  HeadNormsLaunch launch{};
};
Status plan_head_norms(std::string_view where, Device device, const HeadNormsOperands& operands,
                       const std::span<const KvSegment>* segments, HeadNormsPlan& plan);

}  // namespace plumb::ops

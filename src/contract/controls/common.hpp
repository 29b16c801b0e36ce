#pragma once
// Controls: deliberately wrong launchers, each a ForwardingBackend that replaces one typed launcher of the
// CPU backend with a single-threaded loop carrying one planted fault. Outside the fault each computes what
// the real op computes.
#include <memory>
#include <string>

#include "contract/form.hpp"
#include "contract/forwarding_backend.hpp"
#include "core/half.hpp"

namespace plumb::contract::controls {

template <class Variant>
Control planted(std::string name, std::string form, Gate gate, std::string wrong) {
  return Control{
      std::move(name),
      std::move(form),
      gate,
      std::move(wrong),
      DeviceKind::cpu,
      [](ops::Backend& real) -> std::unique_ptr<ops::Backend> { return std::make_unique<Variant>(real); }};
}

// Rounds to bf16 by dropping the low bits (round toward zero), a common hand-written conversion.
inline float truncate_bf16(float value) {
  return bf16_to_f32(static_cast<uint16_t>(std::bit_cast<uint32_t>(value) >> 16));
}

// Applies `element(a, b)` to every element of a RowsLaunch and stores it as the op does.
template <class Element>
void each_element(const ops::RowsLaunch& launch, Element element) {
  for (int64_t r = 0; r < launch.rows; ++r)
    for (int64_t k = 0; k < launch.width; ++k) {
      const float a = bf16_to_f32(launch.a[r * launch.a_stride + k]);
      const float b = launch.b != nullptr ? bf16_to_f32(launch.b[r * launch.b_stride + k]) : 0.0f;
      const float value = element(a, b);
      if (launch.out_dtype == DType::f32)
        static_cast<float*>(launch.out)[r * launch.out_stride + k] = round_bf16(value);
      else
        static_cast<uint16_t*>(launch.out)[r * launch.out_stride + k] = f32_to_bf16(value);
    }
}

}  // namespace plumb::contract::controls

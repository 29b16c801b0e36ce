// Weights, RoPE frequencies and cache sizing: the host-side pieces of the op API.
#include <cmath>

#include <fmt/format.h>

#include "ops/affine.hpp"
#include "ops/check.hpp"
#include "ops/launch.hpp"
#include "ops/ops.hpp"

namespace plumb::ops {

Weight Weight::make_dense(std::string name, TensorView dense) {
  Weight weight;
  weight.name = std::move(name);
  weight.format = Format::dense;
  weight.out = dense.rank() == 2 ? dense.dim(0) : 0;
  weight.in = dense.rank() == 2 ? dense.dim(1) : 0;
  weight.dense = std::move(dense);
  return weight;
}

Weight Weight::make_affine(std::string name, int64_t in, TensorView packed, TensorView scales,
                           TensorView biases, int bits, int group) {
  Weight weight;
  weight.name = std::move(name);
  weight.format = Format::affine;
  weight.out = packed.rank() == 2 ? packed.dim(0) : 0;
  weight.in = in;
  weight.packed = std::move(packed);
  weight.scales = std::move(scales);
  weight.biases = std::move(biases);
  weight.bits = bits;
  weight.group = group;
  return weight;
}

namespace {

Status check_dense(std::string_view where, const Weight& weight) {
  const DType dtype = weight.dense.dtype;
  if (dtype != DType::bf16 && dtype != DType::f16 && dtype != DType::f32)
    return error_at(where, "weight", weight.name, "has an unsupported dtype", "bf16, f16 or f32",
                    dtype_name(dtype));
  if (weight.dense.rank() != 2)
    return error_at(where, "weight", weight.name, "is not a matrix", "[out, in]",
                    shape_string(weight.dense.shape));
  return check_contiguous(where, weight.name, weight.dense, dtype, {weight.out, weight.in},
                          weight.dense.device);
}

Status check_affine(std::string_view where, const Weight& weight) {
  if (!affine_bits_supported(weight.bits))
    return error_at(where, "weight", weight.name, "has unsupported affine bits", "2, 3, 4, 5, 6 or 8",
                    std::to_string(weight.bits));
  if (!affine_group_supported(weight.group))
    return error_at(where, "weight", weight.name, "has an unsupported affine group", "32, 64 or 128",
                    std::to_string(weight.group));
  if (weight.in <= 0 || weight.in % weight.group != 0)
    return error_at(where, "weight", weight.name, "has an input width that is not whole groups",
                    fmt::format("a positive multiple of {}", weight.group), std::to_string(weight.in));
  const Device device = weight.packed.device;
  const int64_t words = affine_row_words(weight.in, weight.bits);
  const int64_t groups = weight.in / weight.group;
  const std::string packed_name = weight.name + ".weight";
  if (weight.packed.rank() != 2 || weight.packed.dim(1) != words)
    return error_at(
        where, "tensor", packed_name, "disagrees with the declared bits and input width",
        fmt::format("[{}, {}] for {} bits over {} inputs", weight.out, words, weight.bits, weight.in),
        shape_string(weight.packed.shape));
  PLUMB_TRY(check_contiguous(where, packed_name, weight.packed, DType::u32, {weight.out, words}, device));
  PLUMB_TRY(check_contiguous(where, weight.name + ".scales", weight.scales, DType::bf16, {weight.out, groups},
                             device));
  PLUMB_TRY(check_contiguous(where, weight.name + ".biases", weight.biases, DType::bf16, {weight.out, groups},
                             device));
  return {};
}

}  // namespace

Status check_weight(std::string_view where, const Weight& weight) {
  if (weight.out <= 0 || weight.in <= 0)
    return error_at(where, "weight", weight.name, "is empty", "out > 0 and in > 0",
                    fmt::format("out {}, in {}", weight.out, weight.in));
  return weight.format == Weight::Format::dense ? check_dense(where, weight) : check_affine(where, weight);
}

Status check_weight_device(std::string_view where, const Weight& weight, Device device) {
  const auto on_device = [&](const TensorView& view, const std::string& name) -> Status {
    if (view.device == device) return {};
    return error_at(where, "tensor", name, "is on the wrong device", device_name(device),
                    device_name(view.device));
  };
  if (weight.format == Weight::Format::dense) return on_device(weight.dense, weight.name + ".weight");
  PLUMB_TRY(on_device(weight.packed, weight.name + ".weight"));
  PLUMB_TRY(on_device(weight.scales, weight.name + ".scales"));
  PLUMB_TRY(on_device(weight.biases, weight.name + ".biases"));
  if (weight.decode_layout.data == nullptr) return {};
  return on_device(weight.decode_layout, weight.name + ".decode_layout");
}

Result<std::optional<DeviceTensor>> prepare_weight(Backend& backend, Weight& weight) {
  constexpr std::string_view where = "ops.prepare_weight";
  if (weight.format != Weight::Format::affine) return std::optional<DeviceTensor>{};
  PLUMB_TRY(check_weight(where, weight));
  PLUMB_TRY(check_weight_device(where, weight, backend.device()));
  weight.decode_layout = {};
  auto copy = backend.prepare_weight(weight_launch(weight));
  if (!copy.ok()) return copy.error();
  if (copy->has_value()) weight.decode_layout = (*copy)->view;
  return copy;
}

std::vector<float> rope_inv_freq(const RopeSpec& spec) {
  PLUMB_ASSERT(spec.head_dim > 0 && spec.head_dim % 2 == 0, "even head_dim");
  const int64_t pairs = spec.head_dim / 2;
  // HF: rope_angles = int(partial_rotary_factor * head_dim // 2).
  const auto rotated =
      static_cast<int64_t>(std::floor(spec.partial_rotary_factor * static_cast<double>(spec.head_dim) / 2.0));
  const float base = static_cast<float>(spec.theta);
  const float factor = static_cast<float>(spec.factor);
  std::vector<float> inv_freq(static_cast<size_t>(pairs), 0.0f);
  for (int64_t i = 0; i < std::min(rotated, pairs); ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(spec.head_dim);
    const auto power = static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    inv_freq[static_cast<size_t>(i)] = (1.0f / power) / factor;
  }
  return inv_freq;
}

int64_t kv_capacity(int64_t window, int64_t max_chunk_rows) {
  PLUMB_ASSERT(window > 0 && max_chunk_rows > 0, "a sliding window and a chunk size");
  return window - 1 + max_chunk_rows;
}

}  // namespace plumb::ops

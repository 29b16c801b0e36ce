// The matmul forms' weights (forms/matmul_weights.hpp).
#include "contract/forms/matmul_weights.hpp"

#include "contract/parallel.hpp"
#include "core/half.hpp"

namespace plumb::contract::forms {
namespace {

// Element j of a packed row: bits [j*bits, j*bits + bits) of the little-endian u32 stream, LSB first.
uint32_t read_code(const uint32_t* row, int64_t j, int bits) {
  uint32_t code = 0;
  for (int b = 0; b < bits; ++b) {
    const int64_t bit = j * bits + b;
    code |= ((row[bit / 32] >> (bit % 32)) & 1u) << b;
  }
  return code;
}

void write_code(uint32_t* row, int64_t j, int bits, uint32_t code) {
  for (int b = 0; b < bits; ++b) {
    const int64_t bit = j * bits + b;
    row[bit / 32] |= ((code >> b) & 1u) << (bit % 32);
  }
}

}  // namespace

std::vector<HostData> make_weight(const WeightSpec& spec, uint64_t seed, Inputs inputs) {
  const bool integers = inputs == Inputs::zero_sum || inputs == Inputs::cancel_pairs;
  Rng rng(seed);
  std::vector<HostData> tensors;
  if (!spec.affine()) {
    std::vector<uint16_t> values =
        integers ? integers_bf16(rng, spec.out * spec.in, -2, 2) : spread_bf16(rng, spec.out * spec.in, 0.08);
    HostData weight = bf16_data("weight", {spec.out, spec.in}, values, false);
    if (spec.dense != DType::bf16) {
      HostData wide = HostData::zeros("weight", spec.dense, weight.shape, false);
      for (int64_t i = 0; i < weight.elements(); ++i) {
        const float value = static_cast<float>(weight.value(i));
        if (spec.dense == DType::f32) wide.as<float>()[i] = value + (integers ? 0.0f : value * 0x1p-11f);
        if (spec.dense == DType::f16) wide.as<uint16_t>()[i] = f32_to_f16(value);
      }
      weight = std::move(wide);
    }
    tensors.push_back(std::move(weight));
    return tensors;
  }
  const int64_t words = spec.in * spec.bits / 32, groups = spec.in / spec.group;
  HostData packed = HostData::zeros("packed", DType::u32, {spec.out, words}, false);
  for (int64_t o = 0; o < spec.out; ++o)
    for (int64_t j = 0; j < spec.in; ++j)
      write_code(packed.as<uint32_t>() + o * words, j, spec.bits,
                 static_cast<uint32_t>(rng.next() & ((1u << spec.bits) - 1u)));
  std::vector<uint16_t> scales(static_cast<size_t>(spec.out * groups)), biases(scales.size());
  const float half_range = static_cast<float>(1 << (spec.bits - 1));
  for (size_t g = 0; g < scales.size(); ++g) {
    float scale = static_cast<float>(0.002 + 0.01 * rng.uniform()) * 8.0f / half_range;
    if (integers) scale = 1.0f;
    if (inputs == Inputs::fractions) scale = 1.0f + 3.0f / 128.0f;
    scales[g] = f32_to_bf16(scale);
    biases[g] = f32_to_bf16(-bf16_to_f32(scales[g]) * half_range);
  }
  tensors.push_back(std::move(packed));
  tensors.push_back(bf16_data("scales", {spec.out, groups}, scales, false));
  tensors.push_back(bf16_data("biases", {spec.out, groups}, biases, false));
  return tensors;
}

HostData matmul_x(const CallRequest& request, int64_t in) {
  Rng rng(request.seed);
  const std::vector<uint16_t> x = request.inputs == Inputs::fractions
                                      ? integers_bf16(rng, request.rows * in, -8, 8)
                                      : activations(request.inputs, rng, request.rows, in, 1.0);
  return bf16_data("x", {request.rows, in}, x, true);
}

std::vector<float> weight_values(const WeightSpec& spec, std::span<const HostData> tensors) {
  std::vector<float> values(static_cast<size_t>(spec.out * spec.in));
  if (!spec.affine()) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = f32_at(tensors[0], static_cast<int64_t>(i));
    return values;
  }
  const int64_t words = spec.in * spec.bits / 32, groups = spec.in / spec.group;
  parallel_indices(spec.out, [&](int64_t o) {  // rows apart: each value is written once
    for (int64_t j = 0; j < spec.in; ++j) {
      const int64_t g = o * groups + j / spec.group;
      const uint32_t code = read_code(tensors[0].as<uint32_t>() + o * words, j, spec.bits);
      const Span product = f32_mul(exact_at(tensors[1], g), Span::exact(code));
      const Span dequantized = bf16(f32_add(product, exact_at(tensors[2], g)));
      values[static_cast<size_t>(o * spec.in + j)] = static_cast<float>(dequantized.lo);
    }
  });
  return values;
}

Result<ops::Weight> weight_from(const WeightSpec& spec, std::span<const TensorView> views) {
  if (!spec.affine()) return ops::Weight::make_dense("weight", views[0]);
  return ops::Weight::make_affine("weight", spec.in, views[0], views[1], views[2], spec.bits, spec.group);
}

Result<PreparedWeight> prepared_weight_from(ops::Backend& backend, const WeightSpec& spec,
                                            std::span<const TensorView> views) {
  auto weight = weight_from(spec, views);
  if (!weight.ok()) return weight.error();
  PreparedWeight prepared{std::move(*weight), std::nullopt};
  auto copy = ops::prepare_weight(backend, prepared.weight);
  if (!copy.ok()) return copy.error();
  prepared.copy = std::move(*copy);
  return prepared;
}

std::vector<Span> matmul_spans(const WeightSpec& spec, const HostData& x, std::span<const HostData> tensors,
                               DType out_dtype) {
  const std::vector<float> w = weight_values(spec, tensors);
  const int64_t rows = x.shape[0];
  std::vector<float> xs(static_cast<size_t>(rows * spec.in));  // read once, not once an output
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = f32_at(x, static_cast<int64_t>(i));
  std::vector<Span> out(static_cast<size_t>(rows * spec.out));
  parallel_indices(rows * spec.out, [&](int64_t item) {
    const int64_t r = item / spec.out, o = item % spec.out;
    const auto in = static_cast<size_t>(spec.in);
    const Span sum = f32_dot(std::span(xs).subspan(static_cast<size_t>(r) * in, in),
                             std::span(w).subspan(static_cast<size_t>(o) * in, in));
    out[static_cast<size_t>(item)] = out_dtype == DType::bf16 ? bf16(sum) : sum;
  });
  return out;
}

}  // namespace plumb::contract::forms

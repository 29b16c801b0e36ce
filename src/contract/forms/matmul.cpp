// Forms of matmul (bf16, f16, f32 and MLX affine weights) and embed_rows, with their ranges: each output a
// dot product of exact fp32 products accumulated in fp32 in any order; embedding rows exact.
#include <map>
#include <memory>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/parallel.hpp"
#include "contract/registry.hpp"
#include "core/half.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {
namespace {

// Weight layout of one form: dense of a dtype, or affine with bits and group.
struct WeightSpec {
  int64_t out = 0;
  int64_t in = 0;
  DType dense = DType::bf16;
  int bits = 0;  // 0: dense
  int group = 0;

  bool affine() const { return bits > 0; }
  std::string text() const {
    return affine() ? fmt::format("affine {}-bit g{}", bits, group) : std::string(dtype_name(dense));
  }
};

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

// Weight tensors: spread values; integers for the summing stresses, so every dot product is exact in fp32;
// for `fractions`, affine scales 1 + 3/128 that put low bits into s * q + b.
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

// The weight's values row by row as fp32: dense exactly; affine as bf16(f32(scale * q + bias)).
std::vector<float> weight_values(const WeightSpec& spec, std::span<const HostData> tensors) {
  std::vector<float> values(static_cast<size_t>(spec.out * spec.in));
  if (!spec.affine()) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = f32_at(tensors[0], static_cast<int64_t>(i));
    return values;
  }
  const int64_t words = spec.in * spec.bits / 32, groups = spec.in / spec.group;
  for (int64_t o = 0; o < spec.out; ++o)
    for (int64_t j = 0; j < spec.in; ++j) {
      const int64_t g = o * groups + j / spec.group;
      const uint32_t code = read_code(tensors[0].as<uint32_t>() + o * words, j, spec.bits);
      const Span product = f32_mul(exact_at(tensors[1], g), Span::exact(code));
      const Span dequantized = bf16(f32_add(product, exact_at(tensors[2], g)));
      values[static_cast<size_t>(o * spec.in + j)] = static_cast<float>(dequantized.lo);
    }
  return values;
}

Result<ops::Weight> weight_from(const WeightSpec& spec, std::span<const TensorView> views) {
  if (!spec.affine()) return ops::Weight::make_dense("weight", views[0]);
  return ops::Weight::make_affine("weight", spec.in, views[0], views[1], views[2], spec.bits, spec.group);
}

// The weight tensors are large and shared by every call of one seed: made once per seed and kind.
class WeightCache {
 public:
  const std::vector<HostData>& get(const WeightSpec& spec, uint64_t seed, Inputs inputs) const {
    auto& slot = cache_[{seed, static_cast<int>(inputs)}];
    if (!slot) slot = std::make_shared<std::vector<HostData>>(make_weight(spec, seed, inputs));
    return *slot;
  }

 private:
  mutable std::map<std::pair<uint64_t, int>, std::shared_ptr<std::vector<HostData>>> cache_;
};

class MatmulForm final : public Form {
 public:
  MatmulForm(std::string name, WeightSpec spec, DType out_dtype)
      : Form("matmul", std::move(name),
             fmt::format("[rows, {}] x [{}, {}] {} -> {}", spec.in, spec.out, spec.in, spec.text(),
                         dtype_name(out_dtype))),
        spec_(spec),
        out_dtype_(out_dtype) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs};
    if (spec.affine()) stresses.push_back(Inputs::fractions);
    // 130 rows take the backend's prompt path (CUDA: the 128-row wgmma tile), which gate 2 then compares with
    // rows alone and in small batches (mma.sync tiles).
    batch_rows = {1, 3, 8, 130};
    // 260 rows of an affine weight take the dequantize-first path (CUDA: dense bf16 scratch through the
    // ring), which gate 2 compares with the decode kernel's rows; on the smaller weights only, for the CPU's
    // time.
    if (spec.affine() && spec.out * spec.in <= int64_t{2048} * 5376) batch_rows.push_back(260);
    shape_rows = 2;
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    const std::vector<uint16_t> x = request.inputs == Inputs::fractions
                                        ? integers_bf16(rng, request.rows * spec_.in, -8, 8)
                                        : activations(request.inputs, rng, request.rows, spec_.in, 1.0);
    call.inputs.push_back(bf16_data("x", {request.rows, spec_.in}, x, true));
    for (const HostData& tensor : weights_.get(spec_, request.shared_seed, request.inputs))
      call.inputs.push_back(tensor);
    call.outputs.push_back(HostData::zeros("out", out_dtype_, {request.rows, spec_.out}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    auto weight = weight_from(spec_, in.subspan(1));
    if (!weight.ok()) return weight.error();
    return ops::matmul(backend, in[0], *weight, out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const std::vector<float> w = weight_values(spec_, std::span(call.inputs).subspan(1));
    std::vector<Span> out(static_cast<size_t>(call.rows * spec_.out));
    parallel_indices(call.rows * spec_.out, [&](int64_t item) {
      const int64_t r = item / spec_.out, o = item % spec_.out;
      thread_local std::vector<float> x;
      x.resize(static_cast<size_t>(spec_.in));
      for (int64_t k = 0; k < spec_.in; ++k)
        x[static_cast<size_t>(k)] = f32_at(call.inputs[0], r * spec_.in + k);
      const Span sum =
          f32_dot(x, std::span(w).subspan(static_cast<size_t>(o * spec_.in), static_cast<size_t>(spec_.in)));
      out[static_cast<size_t>(item)] = out_dtype_ == DType::bf16 ? bf16(sum) : sum;
    });
    return {out};
  }

 private:
  WeightSpec spec_;
  DType out_dtype_;
  WeightCache weights_;
};

// embed_rows: out = bf16(row(id) * bf16(scale)), exact. The table is a slice of the vocabulary at the
// model's width; ids reach its last row.
class EmbedForm final : public Form {
 public:
  EmbedForm(std::string name, WeightSpec spec, float scale)
      : Form("embed_rows", std::move(name),
             fmt::format("ids -> [rows, {}], table [{}, {}] {}, scale {}", spec.in, spec.out, spec.in,
                         spec.text(), scale)),
        spec_(spec),
        scale_(scale) {
    stresses = {Inputs::extremes};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    std::vector<int32_t> ids(static_cast<size_t>(request.rows));
    for (auto& id : ids) id = static_cast<int32_t>(rng.integer(0, spec_.out - 1));
    if (!ids.empty()) ids.back() = static_cast<int32_t>(spec_.out - 1);
    call.inputs.push_back(i32_data("ids", {request.rows}, ids, true));
    std::vector<HostData> table = weights_.get(spec_, request.shared_seed, Inputs::gaussian);
    if (request.inputs == Inputs::extremes) table = extreme_table(request.shared_seed);
    for (HostData& tensor : table) call.inputs.push_back(std::move(tensor));
    call.outputs.push_back(HostData::zeros("out", DType::bf16, {request.rows, spec_.in}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    auto table = weight_from(spec_, in.subspan(1));
    if (!table.ok()) return table.error();
    return ops::embed_rows(backend, in[0], *table, scale_, out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const std::vector<float> table = weight_values(spec_, std::span(call.inputs).subspan(1));
    const HostData& ids = call.inputs[0];
    std::vector<Span> out;
    for (int64_t r = 0; r < call.rows; ++r) {
      const auto id = static_cast<int64_t>(ids.value(r));
      for (int64_t k = 0; k < spec_.in; ++k)
        out.push_back(bf16(f32_mul(Span::exact(table[static_cast<size_t>(id * spec_.in + k)]),
                                   Span::exact(round_bf16_value(scale_)))));
    }
    return {out};
  }

 private:
  // Table values (or affine scales and biases) spread over bf16's range, so the scale product overflows
  // to infinity or lands among subnormals; affine ones stay where scale * q + b cannot overflow.
  std::vector<HostData> extreme_table(uint64_t seed) const {
    std::vector<HostData> table = make_weight(spec_, seed, Inputs::gaussian);
    Rng rng(mix_seed(seed, 5));
    for (size_t t = spec_.affine() ? 1 : 0; t < table.size(); ++t)
      store_bf16(extremes_bf16(rng, table[t].elements(), spec_.affine() ? 0x1p100 : 0x1p126), table[t].bytes);
    return table;
  }

  WeightSpec spec_;
  float scale_;
  WeightCache weights_;
};

}  // namespace

void register_matmul_forms(Registry& registry) {
  auto& forms = registry.forms;
  const auto matmul = [&](std::string name, WeightSpec spec, DType out = DType::bf16) {
    forms.push_back(std::make_unique<MatmulForm>("matmul/" + std::move(name), spec, out));
  };
  // Gemma 4 12B: q_proj (sliding), the MLP's gate and down, a global q_proj 4-bit; the tied head's first
  // 4096 vocabulary rows in f32 (the logits a score run keeps).
  matmul("12b-q-sliding", {4096, 3840});
  matmul("12b-mlp-gate", {15360, 3840});
  matmul("12b-mlp-down", {3840, 15360});
  matmul("12b-q-global-4bit-g64", {8192, 3840, DType::bf16, 4, 64});
  matmul("12b-head-slice-f32", {4096, 3840}, DType::f32);
  matmul("12b-k-global-8bit-g128", {512, 3840, DType::bf16, 8, 128});
  matmul("12b-k-sliding-2bit-g32", {2048, 3840, DType::bf16, 2, 32});
  // Gemma 4 31B: o_proj (sliding) 5-bit, k_proj (global) 3-bit and 6-bit.
  matmul("31b-o-sliding-5bit-g32", {5376, 8192, DType::bf16, 5, 32});
  matmul("31b-k-global-3bit-g64", {2048, 5376, DType::bf16, 3, 64});
  matmul("31b-k-global-6bit-g128", {2048, 5376, DType::bf16, 6, 128});
  // Dense f16 and f32 checkpoints.
  matmul("12b-k-global-f16", {512, 3840, DType::f16});
  matmul("12b-k-global-f32", {512, 3840, DType::f32});
  forms.push_back(std::make_unique<EmbedForm>("embed_rows/12b-bf16", WeightSpec{4096, 3840}, 62.0f));
  forms.push_back(std::make_unique<EmbedForm>("embed_rows/31b-affine-4bit-g64",
                                              WeightSpec{4096, 5376, DType::bf16, 4, 64}, 73.5f));
  forms.push_back(std::make_unique<EmbedForm>("embed_rows/12b-affine-8bit-g32",
                                              WeightSpec{2048, 3840, DType::bf16, 8, 32}, 62.0f));
}

}  // namespace plumb::contract::forms

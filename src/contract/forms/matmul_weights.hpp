#pragma once
// The weights of the matmul forms (forms/matmul.cpp, forms/matmul_group.cpp): dense or MLX affine tensors
// made from a seed, their values as the reference reads them, and the expected output ranges.
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "ops/backend.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {

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

// Weight tensors: spread values; integers for the summing stresses, so every dot product is exact in fp32;
// for `fractions`, affine scales 1 + 3/128 that put low bits into s * q + b.
std::vector<HostData> make_weight(const WeightSpec& spec, uint64_t seed, Inputs inputs);

// A matmul form's input x, bf16 [rows, in]: small integers for `fractions` (so sums of fractions stay exact),
// else the kind's activations.
HostData matmul_x(const CallRequest& request, int64_t in);

// The weight's values row by row as fp32: dense exactly; affine as bf16(f32(scale * q + bias)).
std::vector<float> weight_values(const WeightSpec& spec, std::span<const HostData> tensors);

Result<ops::Weight> weight_from(const WeightSpec& spec, std::span<const TensorView> views);

// A matmul weight with the backend's own copy of it (ops::prepare_weight), as the model loader makes it, so
// the form runs the kernel a loaded model runs; the copy lives as long as this.
struct PreparedWeight {
  ops::Weight weight;
  std::optional<ops::DeviceTensor> copy;
};
Result<PreparedWeight> prepared_weight_from(ops::Backend& backend, const WeightSpec& spec,
                                            std::span<const TensorView> views);

// x · Wᵀ's ranges, row by row: each output a dot product of exact fp32 products accumulated in fp32 in any
// order, rounded to bf16 once or kept f32.
std::vector<Span> matmul_spans(const WeightSpec& spec, const HostData& x, std::span<const HostData> tensors,
                               DType out_dtype);

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

}  // namespace plumb::contract::forms

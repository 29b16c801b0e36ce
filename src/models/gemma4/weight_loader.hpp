#pragma once
// Reads declared tensors out of a checkpoint onto a backend, checking each against its expected shape and
// remembering which checkpoint tensors were read.
#include <set>
#include <string>

#include "core/safetensors.hpp"
#include "models/gemma4/config.hpp"
#include "models/gemma4/try_assign.hpp"
#include "ops/backend.hpp"
#include "ops/ops.hpp"

namespace plumb::gemma4 {

class WeightLoader {
 public:
  WeightLoader(const Checkpoint& checkpoint, const Quantization& quantization, ops::Backend& backend,
               std::vector<ops::DeviceTensor>& storage);

  const std::string& where() const { return where_; }
  bool has(const std::string& name) const { return checkpoint_.find(name) != nullptr; }

  // A linear or embedding module `module` (its tensors are module.weight, and when quantized .scales and
  // .biases) of logical shape [out, in]. `canonical` is the module's MLX path, under which config.json's
  // per-module quantization entries may be keyed.
  Result<ops::Weight> linear(const std::string& module, const std::string& canonical, int64_t out,
                             int64_t in);
  // The module's affine spec when it is quantized: its config.json entry (under either name), else the
  // global spec when its .scales tensor exists and the config has a quantization block.
  std::optional<AffineSpec> quantization_of(const std::string& module, const std::string& canonical) const;
  // A [dim] vector read as bf16 (converted from f16 or f32).
  Result<TensorView> vector_bf16(const std::string& name, int64_t dim);
  // A one-element tensor's value, rounded to bf16.
  Result<float> scalar_bf16(const std::string& name);
  // A [rows, cols] dense matrix converted to bf16 (embedding tables, which the ops read as bf16).
  Result<ops::Weight> dense_bf16(const std::string& module, int64_t rows, int64_t cols);

  // Every checkpoint tensor not read so far, sorted.
  std::vector<std::string> unused() const;

 private:
  Result<const CheckpointTensor*> require(const std::string& name) const;
  Status expect_shape(const CheckpointTensor& tensor, const Shape& shape, std::string_view what) const;
  Status expect_dtype(const CheckpointTensor& tensor, std::initializer_list<DType> dtypes,
                      std::string_view expected) const;
  Result<ops::Weight> affine(const std::string& module, int64_t out, int64_t in, const AffineSpec& spec);
  // The tensor's bytes on the backend: in place when the backend reads host memory and the data is aligned.
  Result<TensorView> place(const CheckpointTensor& tensor);
  Result<TensorView> place_bf16(const CheckpointTensor& tensor);

  const Checkpoint& checkpoint_;
  const Quantization& quantization_;
  ops::Backend& backend_;
  std::vector<ops::DeviceTensor>& storage_;
  std::string where_;
  std::set<std::string> read_;
};

}  // namespace plumb::gemma4

#include "models/gemma4/weight_loader.hpp"

#include <cstring>

#include <fmt/format.h>

#include "core/half.hpp"
#include "models/gemma4/quantization.hpp"
#include "ops/affine.hpp"

namespace plumb::gemma4 {

namespace {

float element_as_float(const CheckpointTensor& tensor, int64_t index) {
  const std::byte* at = tensor.data + static_cast<size_t>(index) * dtype_size(tensor.dtype);
  if (tensor.dtype == DType::f32) {
    float value;
    std::memcpy(&value, at, sizeof value);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, at, sizeof bits);
  return tensor.dtype == DType::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits);
}

std::string checkpoint_name(const Checkpoint& checkpoint) {
  if (checkpoint.sharded()) return checkpoint.index().string();
  return checkpoint.files().empty() ? std::string("checkpoint") : checkpoint.files().front().string();
}

}  // namespace

WeightLoader::WeightLoader(const Checkpoint& checkpoint, const Quantization& quantization,
                           ops::Backend& backend, std::vector<ops::DeviceTensor>& storage)
    : checkpoint_(checkpoint),
      quantization_(quantization),
      backend_(backend),
      storage_(storage),
      where_(checkpoint_name(checkpoint)) {}

Result<const CheckpointTensor*> WeightLoader::require(const std::string& name) const {
  const CheckpointTensor* tensor = checkpoint_.find(name);
  if (tensor == nullptr)
    return error_at(where_, "tensor", name, "is missing", "a tensor of that name", "none in the checkpoint");
  return tensor;
}

Status WeightLoader::expect_shape(const CheckpointTensor& tensor, const Shape& shape,
                                  std::string_view what) const {
  if (tensor.shape == shape) return {};
  return error_at(where_, "tensor", tensor.name, fmt::format("has the wrong shape{}", what),
                  shape_string(shape), shape_string(tensor.shape));
}

Status WeightLoader::expect_dtype(const CheckpointTensor& tensor, std::initializer_list<DType> dtypes,
                                  std::string_view expected) const {
  for (DType dtype : dtypes)
    if (tensor.dtype == dtype) return {};
  return error_at(where_, "tensor", tensor.name, "has an unsupported dtype", expected,
                  dtype_name(tensor.dtype));
}

std::optional<AffineSpec> WeightLoader::quantization_of(const std::string& module,
                                                        const std::string& canonical) const {
  if (const auto* entry = module_entry(quantization_, module)) return *entry;
  if (const auto* entry = module_entry(quantization_, canonical)) return *entry;
  if (quantization_.present && has(module + ".scales")) return quantization_.defaults;
  return std::nullopt;
}

Result<TensorView> WeightLoader::place(const CheckpointTensor& tensor) {
  read_.insert(tensor.name);
  const auto address = reinterpret_cast<uintptr_t>(tensor.data);
  if (backend_.device().kind == DeviceKind::cpu && address % dtype_size(tensor.dtype) == 0)
    return tensor.view();
  auto placed = backend_.allocate(tensor.dtype, tensor.shape);
  if (!placed.ok()) return placed.error();
  if (address % dtype_size(tensor.dtype) != 0) {
    // The mapping is not aligned for this dtype: copy through aligned host memory first.
    HostTensor aligned(tensor.dtype, tensor.shape);
    std::memcpy(aligned.view.data, tensor.data, static_cast<size_t>(tensor.bytes));
    PLUMB_TRY(backend_.upload(aligned.view, placed->view));
  } else {
    PLUMB_TRY(backend_.upload(tensor.view(), placed->view));
  }
  storage_.push_back(*placed);
  return placed->view;
}

Result<TensorView> WeightLoader::place_bf16(const CheckpointTensor& tensor) {
  if (tensor.dtype == DType::bf16) return place(tensor);
  read_.insert(tensor.name);
  HostTensor converted(DType::bf16, tensor.shape);
  auto* bits = converted.as<uint16_t>();
  const int64_t count = shape_elements(tensor.shape);
  for (int64_t i = 0; i < count; ++i) bits[i] = f32_to_bf16(element_as_float(tensor, i));
  auto placed = backend_.allocate(DType::bf16, tensor.shape);
  if (!placed.ok()) return placed.error();
  PLUMB_TRY(backend_.upload(converted.view, placed->view));
  storage_.push_back(*placed);
  return placed->view;
}

Result<ops::Weight> WeightLoader::affine(const std::string& module, int64_t out, int64_t in,
                                         const AffineSpec& spec) {
  const std::string declared =
      fmt::format(" for {} bits in groups of {} over {} inputs", spec.bits, spec.group, in);
  if (in % spec.group != 0 || in % 32 != 0)
    return error_at(where_, "module", module, "cannot be quantized with its declared group",
                    fmt::format("an input width that is a multiple of {} and 32", spec.group),
                    std::to_string(in));
  PLUMB_TRY_ASSIGN(packed, require(module + ".weight"));
  PLUMB_TRY_ASSIGN(scales, require(module + ".scales"));
  PLUMB_TRY_ASSIGN(biases, require(module + ".biases"));
  PLUMB_TRY(expect_dtype(*packed, {DType::u32}, "u32 (packed)"));
  PLUMB_TRY(expect_dtype(*scales, {DType::bf16}, "bf16"));
  PLUMB_TRY(expect_dtype(*biases, {DType::bf16}, "bf16"));
  const std::string disagree = " (it disagrees with the declared bits or group)";
  PLUMB_TRY(expect_shape(*packed, {out, ops::affine_row_words(in, spec.bits)}, disagree + declared));
  PLUMB_TRY(expect_shape(*scales, {out, in / spec.group}, disagree + declared));
  PLUMB_TRY(expect_shape(*biases, {out, in / spec.group}, disagree + declared));
  PLUMB_TRY_ASSIGN(packed_view, place(*packed));
  PLUMB_TRY_ASSIGN(scales_view, place(*scales));
  PLUMB_TRY_ASSIGN(biases_view, place(*biases));
  ops::Weight weight =
      ops::Weight::make_affine(module, in, packed_view, scales_view, biases_view, spec.bits, spec.group);
  PLUMB_TRY(ops::check_weight(where_, weight));
  PLUMB_TRY_ASSIGN(decode_copy, ops::prepare_weight(backend_, weight));
  if (decode_copy.has_value()) storage_.push_back(std::move(*decode_copy));
  return weight;
}

Result<ops::Weight> WeightLoader::linear(const std::string& module, const std::string& canonical, int64_t out,
                                         int64_t in) {
  if (const auto spec = quantization_of(module, canonical)) return affine(module, out, in, *spec);
  PLUMB_TRY_ASSIGN(tensor, require(module + ".weight"));
  PLUMB_TRY(
      expect_dtype(*tensor, {DType::bf16, DType::f16, DType::f32}, "bf16, f16 or f32 (or u32 with .scales)"));
  PLUMB_TRY(expect_shape(*tensor, {out, in}, ""));
  PLUMB_TRY_ASSIGN(view, place(*tensor));
  return ops::Weight::make_dense(module, view);
}

Result<ops::Weight> WeightLoader::dense_bf16(const std::string& module, int64_t rows, int64_t cols) {
  PLUMB_TRY_ASSIGN(tensor, require(module + ".weight"));
  PLUMB_TRY(
      expect_dtype(*tensor, {DType::bf16, DType::f16, DType::f32}, "bf16, f16 or f32 (or u32 with .scales)"));
  PLUMB_TRY(expect_shape(*tensor, {rows, cols}, ""));
  PLUMB_TRY_ASSIGN(view, place_bf16(*tensor));
  return ops::Weight::make_dense(module, view);
}

Result<TensorView> WeightLoader::vector_bf16(const std::string& name, int64_t dim) {
  PLUMB_TRY_ASSIGN(tensor, require(name));
  PLUMB_TRY(expect_dtype(*tensor, {DType::bf16, DType::f16, DType::f32}, "bf16, f16 or f32"));
  PLUMB_TRY(expect_shape(*tensor, {dim}, ""));
  return place_bf16(*tensor);
}

Result<float> WeightLoader::scalar_bf16(const std::string& name) {
  PLUMB_TRY_ASSIGN(tensor, require(name));
  PLUMB_TRY(expect_dtype(*tensor, {DType::bf16, DType::f16, DType::f32}, "bf16, f16 or f32"));
  if (shape_elements(tensor->shape) != 1) PLUMB_TRY(expect_shape(*tensor, {1}, ""));
  read_.insert(name);
  return round_bf16(element_as_float(*tensor, 0));
}

std::vector<std::string> WeightLoader::unused() const {
  std::vector<std::string> names;
  for (const CheckpointTensor& tensor : checkpoint_.tensors())
    if (!read_.count(tensor.name)) names.push_back(tensor.name);
  return names;
}

}  // namespace plumb::gemma4

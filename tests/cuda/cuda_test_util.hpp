#pragma once
// Shared pieces of the CUDA backend tests: one backend per test binary (skipped with a message where there is
// no GPU, as in CI), the CPU backend to compare against, device weights, and bit comparisons that print
// index, expected, got and the bound.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"
#include "ops/affine.hpp"
#include "ops/attention_stream.hpp"

namespace plumb::cuda {
using ops::DeviceTensor;
using ops::Weight;
using ops::testing::Values;
}  // namespace plumb::cuda

namespace plumb::cuda::testing {

inline std::unique_ptr<CudaBackend> make_gpu(const CudaOptions& options) {
  if (device_count() == 0) return nullptr;
  auto made = CudaBackend::create(0, options);
  if (!made) ADD_FAILURE() << made.error().message;
  return made ? std::move(*made) : nullptr;
}

// The test binary's CUDA backend with the environment's options (PLUMB_CUDA_DECODE_MATMUL=0 runs every test
// on the tiled matmul alone), or nullptr when this machine has no GPU (CI).
inline CudaBackend* gpu() {
  static std::unique_ptr<CudaBackend> backend = make_gpu(CudaOptions::from_environment());
  return backend.get();
}

// Backends with the decode matmul on (4-bit weights in the decode layout, or all read from the packed rows
// through the ring) and off, to compare the kernels.
inline CudaBackend* decode_gpu() {
  static std::unique_ptr<CudaBackend> backend = make_gpu(CudaOptions{.decode_matmul = true});
  return backend.get();
}
inline CudaBackend* ring_gpu() {
  static std::unique_ptr<CudaBackend> backend =
      make_gpu(CudaOptions{.decode_matmul = true, .decode_layout = false});
  return backend.get();
}
inline CudaBackend* tiled_gpu() {
  static std::unique_ptr<CudaBackend> backend = make_gpu(CudaOptions{.decode_matmul = false});
  return backend.get();
}

inline ops::Backend& cpu() {
  static std::unique_ptr<ops::Backend> backend = plumb::cpu::make_cpu_backend(0);
  return *backend;
}

#define PLUMB_GPU_OR_SKIP()                                                                      \
  if (::plumb::cuda::testing::gpu() == nullptr)                                                  \
  GTEST_SKIP() << "no CUDA GPU on this machine: the CUDA backend tests run on the GPU machine, " \
                  "this build only checks that they compile"

// A weight whose tensors live on `backend`, with the storage that keeps them alive.
struct DeviceWeight {
  Weight weight;
  std::vector<DeviceTensor> storage;
};

inline DeviceWeight dense_weight(ops::Backend& backend, const Values& w, int64_t out, int64_t in) {
  DeviceTensor dense = ops::testing::device_bf16(backend, w, {out, in});
  return {Weight::make_dense("w", dense.view), {dense}};
}

inline DeviceWeight affine_weight(ops::Backend& backend, const ops::AffineTensor& q, int64_t out, int64_t in,
                                  int bits, int group) {
  const int64_t words = ops::affine_row_words(in, bits);
  DeviceTensor packed = ops::testing::device_tensor(backend, DType::u32, {out, words}, q.packed.data());
  DeviceTensor scales = ops::testing::device_tensor(backend, DType::bf16, {out, in / group}, q.scales.data());
  DeviceTensor biases = ops::testing::device_tensor(backend, DType::bf16, {out, in / group}, q.biases.data());
  DeviceWeight made{Weight::make_affine("w", in, packed.view, scales.view, biases.view, bits, group),
                    {packed, scales, biases}};
  // The backend's own copy, as the model loader makes it.
  auto copy = ops::prepare_weight(backend, made.weight);
  if (!copy.ok()) ADD_FAILURE() << copy.error().message;
  if (copy.ok() && copy->has_value()) made.storage.push_back(std::move(**copy));
  return made;
}

// The bytes of q, k and v, then of each cache, one after another: what head_norms with caches writes.
inline std::vector<uint8_t> head_norms_bytes(ops::Backend& backend, const DeviceTensor& q,
                                             const DeviceTensor& k, const DeviceTensor& v,
                                             const std::vector<DeviceTensor>& caches) {
  std::vector<const DeviceTensor*> written{&q, &k, &v};
  for (const DeviceTensor& cache : caches) written.push_back(&cache);
  std::vector<uint8_t> bytes;
  for (const DeviceTensor* t : written) {
    const std::vector<uint8_t> part = ops::testing::download_bytes(backend, t->view);
    bytes.insert(bytes.end(), part.begin(), part.end());
  }
  return bytes;
}

// Bytes equal, compared as 16-bit (bf16) or 32-bit (f32, i32) elements; prints the first differences.
inline void expect_same_bits(const std::string& what, const std::vector<uint8_t>& got,
                             const std::vector<uint8_t>& expected, size_t element_bytes) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  size_t failures = 0;
  for (size_t at = 0; at + element_bytes <= got.size(); at += element_bytes) {
    uint32_t g = 0, e = 0;
    std::memcpy(&g, got.data() + at, element_bytes);
    std::memcpy(&e, expected.data() + at, element_bytes);
    if (g != e && failures++ < 8)
      ADD_FAILURE() << fmt::format("{}: index {} expected bits {:#x}, got {:#x}, bound exact", what,
                                   at / element_bytes, e, g);
  }
  EXPECT_EQ(failures, 0u) << what << ": elements differ";
}

// gamma(n) = n u / (1 - n u), u = 2^-24: the relative bound of n fp32 roundings.
inline double gamma_f32(double n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1.0 - n * u);
}

// got (bf16 or f32 values) lies in [round(lo), round(hi)] around the pre-rounding reference, where lo and hi
// are reference -+ slack(k); round is bf16 rounding when `bf16_out` (nearest rounding is monotone, so every
// value in [lo, hi] rounds into that range).
inline void expect_within(const std::string& what, const Values& got, const Values& reference,
                          const std::function<double(size_t)>& slack, bool bf16_out) {
  ASSERT_EQ(got.size(), reference.size()) << what;
  const auto round = [&](double value) {
    return bf16_out ? ops::reference::round_bf16(value) : ops::reference::round_f32(value);
  };
  size_t failures = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double lo = round(reference[k] - slack(k)), hi = round(reference[k] + slack(k));
    if (!(got[k] >= lo && got[k] <= hi) && failures++ < 8)
      ADD_FAILURE() << fmt::format(
          "{}: index {} expected {:.9g} in [{:.9g}, {:.9g}], got {:.9g}, bound {:.3g}", what, k, reference[k],
          lo, hi, got[k], slack(k));
  }
  EXPECT_EQ(failures, 0u) << what << ": outputs outside the range";
}

}  // namespace plumb::cuda::testing

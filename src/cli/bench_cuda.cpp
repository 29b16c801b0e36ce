// The CUDA side of `plumb bench`'s bounds: the arena's peak, and cuBLAS's bf16 GEMM rate (random operands, as
// zeros run faster than real data), timed with events on the backend's stream. cuBLAS is opened at run time,
// so plumb starts (and only this bound goes unmeasured) where the library is absent.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "cli/bench_bounds.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/matmul_plan.hpp"
#include "cuda/stream.hpp"
#include "models/gemma4/try_assign.hpp"

#ifdef PLUMB_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

namespace plumb::cli {

int64_t peak_device_bytes(const ops::Backend& backend) {
  const auto* gpu = dynamic_cast<const cuda::CudaBackend*>(&backend);
  return gpu != nullptr ? static_cast<int64_t>(gpu->arena().peak_in_use_bytes()) : -1;
}

std::string backend_description(const ops::Backend& backend) {
  const auto* gpu = dynamic_cast<const cuda::CudaBackend*>(&backend);
  if (gpu == nullptr) return std::string(backend.name());
  const cuda::DeviceInfo& info = gpu->info();
  const int64_t split_blocks = cuda::matmul::split_target_blocks();
  const std::string plan = split_blocks == cuda::matmul::kDefaultSplitBlocks
                               ? ""
                               : fmt::format("; K splits aim at {} blocks", split_blocks);
  return fmt::format("cuda ({}, compute {}.{}, {} SMs; decode matmul {}{})", info.name, info.major,
                     info.minor, info.multiprocessors, gpu->options().decode_matmul ? "on" : "off", plan);
}

bool enable_op_profile(ops::Backend& backend) {
  auto* gpu = dynamic_cast<cuda::CudaBackend*>(&backend);
  if (gpu != nullptr) gpu->enable_profile();
  return gpu != nullptr;
}

std::string take_op_profile(ops::Backend& backend, int64_t steps, size_t lines) {
  auto* gpu = dynamic_cast<cuda::CudaBackend*>(&backend);
  if (gpu == nullptr) return {};
  const std::vector<cuda::OpTime> times = gpu->take_profile();
  double total = 0;
  for (const cuda::OpTime& time : times) total += time.milliseconds;
  const double per = 1.0 / static_cast<double>(std::max<int64_t>(steps, 1));
  std::string text =
      fmt::format("  device time per forward: {:.3f} ms in {} labels\n", total * per, times.size());
  for (size_t i = 0; i < std::min(lines, times.size()); ++i)
    text += fmt::format("  {:8.3f} ms {:5.1f}% {:5.0f} launches  {}\n", times[i].milliseconds * per,
                        100.0 * times[i].milliseconds / std::max(total, 1e-30),
                        static_cast<double>(times[i].launches) * per, times[i].label);
  return text;
}

#ifdef PLUMB_HAVE_CUBLAS
namespace {

Status cublas_status(std::string_view call, cublasStatus_t code) {
  if (code == CUBLAS_STATUS_SUCCESS) return {};
  return error_at("bench", "call", call, "failed", "CUBLAS_STATUS_SUCCESS",
                  std::to_string(static_cast<int>(code)));
}

Result<ops::DeviceTensor> random_matrix(ops::Backend& backend, int64_t size, uint32_t seed) {
  PLUMB_TRY_ASSIGN(matrix, backend.allocate(DType::bf16, {size, size}));
  std::vector<uint16_t> values(static_cast<size_t>(size * size));
  std::mt19937 random(seed);
  // bf16 in [-1, 1): sign, exponents 2^-8 .. 2^-1, random mantissa.
  for (uint16_t& value : values) {
    const uint32_t bits = random();
    value = static_cast<uint16_t>((bits & 0x8000u) | ((119u + bits % 8u) << 7) | ((bits >> 8) & 0x7fu));
  }
  PLUMB_TRY(backend.upload(TensorView::contiguous(values.data(), DType::bf16, {size, size}), matrix.view));
  return matrix;
}

// The four cuBLAS entry points the bound uses, from libcublas opened at run time.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                         const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                         cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
};

Result<Cublas> open_cublas() {
  void* library = nullptr;
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
    if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (library == nullptr) {
    const char* why = dlerror();
    return error_at("bench", "library", "libcublas", "could not be opened",
                    "libcublas.so.13 on the loader's path", why != nullptr ? why : "not found");
  }
  Cublas cublas;
  cublas.create = reinterpret_cast<decltype(cublas.create)>(dlsym(library, "cublasCreate_v2"));
  cublas.set_stream = reinterpret_cast<decltype(cublas.set_stream)>(dlsym(library, "cublasSetStream_v2"));
  cublas.gemm = reinterpret_cast<decltype(cublas.gemm)>(dlsym(library, "cublasGemmEx"));
  cublas.destroy = reinterpret_cast<decltype(cublas.destroy)>(dlsym(library, "cublasDestroy_v2"));
  if (!cublas.create || !cublas.set_stream || !cublas.gemm || !cublas.destroy)
    return error_at("bench", "library", "libcublas", "lacks an entry point", "cublasGemmEx and friends",
                    "missing");
  return cublas;
}

// Median milliseconds of 10 products after 3 warm-ups, timed with events on `stream`.
Result<double> median_product_ms(cudaStream_t stream, const std::function<Status()>& product) {
  PLUMB_TRY_ASSIGN(start, cuda::Event::create());
  PLUMB_TRY_ASSIGN(stop, cuda::Event::create());
  std::vector<float> times;
  for (int i = 0; i < 13; ++i) {
    PLUMB_TRY(start.record(stream));
    PLUMB_TRY(product());
    PLUMB_TRY(stop.record(stream));
    PLUMB_TRY(stop.synchronize());
    PLUMB_TRY_ASSIGN(ms, cuda::Event::elapsed_ms(start, stop));
    if (i >= 3) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return static_cast<double>(times[times.size() / 2]);
}

}  // namespace

Result<double> library_gemm_rate(ops::Backend& backend, int64_t size) {
  auto* gpu = dynamic_cast<cuda::CudaBackend*>(&backend);
  if (gpu == nullptr)
    return error_at("bench", "bound", "bf16 GEMM", "is measured on the CUDA backend only", "cuda",
                    std::string(backend.name()));
  PLUMB_TRY_ASSIGN(cublas, open_cublas());
  PLUMB_TRY_ASSIGN(a, random_matrix(backend, size, 1));
  PLUMB_TRY_ASSIGN(b, random_matrix(backend, size, 2));
  PLUMB_TRY_ASSIGN(c, backend.allocate(DType::bf16, {size, size}));
  cublasHandle_t handle = nullptr;
  PLUMB_TRY(cublas_status("cublasCreate", cublas.create(&handle)));
  const auto product = [&]() -> Status {
    const float alpha = 1.0f, beta = 0.0f;
    const int n = static_cast<int>(size);
    return cublas_status("cublasGemmEx",
                         cublas.gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.view.data,
                                     CUDA_R_16BF, n, b.view.data, CUDA_R_16BF, n, &beta, c.view.data,
                                     CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  const Status set = cublas_status("cublasSetStream", cublas.set_stream(handle, gpu->stream()));
  auto ms = set.ok() ? median_product_ms(gpu->stream(), product) : Result<double>(set.error());
  cublas.destroy(handle);
  if (!ms) return ms.error();
  const double n = static_cast<double>(size);
  return 2.0 * n * n * n / (*ms * 1e-3);
}
#endif

}  // namespace plumb::cli

#pragma once
// The two bounds `plumb bench` reports each speed against (DESIGN.md §8), measured in the same run: the
// device copy bandwidth (bytes read + written per second through the backend's copy) and the bf16 matrix
// product rate of the platform's GEMM library (cuBLAS on the CUDA backend).
#include <cstdint>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "ops/backend.hpp"

namespace plumb::cli {

// Median seconds of `repeats` runs of `run` after `warmups`, each timed up to backend.synchronize().
Result<double> median_seconds(ops::Backend& backend, int warmups, int repeats,
                              const std::function<Status()>& run);

// Bytes read + written per second by backend.copy between two buffers of `bytes` bytes.
Result<double> copy_bandwidth(ops::Backend& backend, int64_t bytes);

// FLOP/s of the platform GEMM library on random bf16 [size, size] x [size, size] with fp32 accumulation, or
// an error saying why it was not measured (not the CUDA backend, or no cuBLAS in this build).
Result<double> library_gemm_rate(ops::Backend& backend, int64_t size);

// Bytes the backend's allocator held at most so far (the CUDA arena's peak), or -1 when it does not say.
int64_t peak_device_bytes(const ops::Backend& backend);

// Turns on per-op device timing where the backend has it (CUDA); returns whether it does.
bool enable_op_profile(ops::Backend& backend);
// The per-op device times since the last call, as printable lines (largest first, at most `lines`), each per
// one of `steps` forwards; empty where the backend has no profile.
std::string take_op_profile(ops::Backend& backend, int64_t steps, size_t lines);

// The backend in words: its name, and on CUDA the GPU and whether the decode matmul is on.
std::string backend_description(const ops::Backend& backend);

}  // namespace plumb::cli

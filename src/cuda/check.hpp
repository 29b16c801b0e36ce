#pragma once
// Every CUDA runtime call is checked; a failure becomes a Status that names the call and the CUDA error.
#include <string_view>

#include <cuda_runtime.h>

#include "core/error.hpp"

namespace plumb::cuda {

// `call` is the call's source text; its name (up to the first '(') goes into the message:
// "<where>: call 'cudaMalloc' failed; expected cudaSuccess, got cudaErrorMemoryAllocation (out of memory)".
Status cuda_status(std::string_view where, std::string_view call, cudaError_t code);

}  // namespace plumb::cuda

// Returns the failure of a CUDA runtime call from the enclosing function (which returns Status or Result<T>).
#define PLUMB_CUDA_TRY(where, call) PLUMB_TRY(::plumb::cuda::cuda_status((where), #call, (call)))

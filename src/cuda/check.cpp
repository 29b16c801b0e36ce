#include "cuda/check.hpp"

#include <fmt/format.h>

namespace plumb::cuda {

Status cuda_status(std::string_view where, std::string_view call, cudaError_t code) {
  if (code == cudaSuccess) return {};
  const std::string_view name = call.substr(0, call.find('('));
  return error_at(where, "call", name, "failed", "cudaSuccess",
                  fmt::format("{} ({})", cudaGetErrorName(code), cudaGetErrorString(code)));
}

}  // namespace plumb::cuda

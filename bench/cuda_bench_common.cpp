// What the CUDA benchmarks share (cuda_bench_common.hpp).
#include "cuda_bench_common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/check.hpp"

namespace plumb::bench {

using cuda::CudaBackend;
using ops::DeviceTensor;

void require(const Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "bench: %s\n", status.error().message.c_str());
    std::exit(1);
  }
}

DeviceTensor tensor(CudaBackend& backend, DType dtype, Shape shape, uint32_t seed, float low, float high) {
  auto made = backend.allocate(dtype, std::move(shape));
  if (!made) require(made.error());
  const size_t elements = static_cast<size_t>(made->view.elements());
  if (dtype == DType::bf16) {
    require(cuda::cuda_status("bench", "fill_bf16",
                              fill_bf16(made->view.data, elements, seed, low, high, backend.stream())));
  } else {
    require(cuda::cuda_status(
        "bench", "fill_u32",
        fill_u32(made->view.data, elements * dtype_size(dtype) / 4, seed, backend.stream())));
  }
  return *made;
}

double median_ms(CudaBackend& backend, const std::function<void()>& run, int repeats) {
  for (int i = 0; i < 2; ++i) run();
  require(backend.synchronize());
  std::vector<float> times;
  auto start = cuda::Event::create(), stop = cuda::Event::create();
  if (!start || !stop) require(start ? stop.error() : start.error());
  for (int i = 0; i < repeats; ++i) {
    require(start->record(backend.stream()));
    run();
    require(stop->record(backend.stream()));
    require(stop->synchronize());
    require(backend.synchronize());
    auto ms = cuda::Event::elapsed_ms(*start, *stop);
    if (!ms) require(ms.error());
    times.push_back(*ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double graph_ms(CudaBackend& backend, const std::function<void()>& run, int repeats) {
  run();  // grows any scratch before capture
  require(backend.synchronize());
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  require(cuda::cuda_status("bench", "cudaStreamBeginCapture",
                            cudaStreamBeginCapture(backend.stream(), cudaStreamCaptureModeRelaxed)));
  run();
  require(cuda::cuda_status("bench", "cudaStreamEndCapture", cudaStreamEndCapture(backend.stream(), &graph)));
  require(cuda::cuda_status("bench", "cudaGraphInstantiate", cudaGraphInstantiate(&exec, graph, 0)));
  const double ms = median_ms(
      backend,
      [&] {
        require(cuda::cuda_status("bench", "cudaGraphLaunch", cudaGraphLaunch(exec, backend.stream())));
      },
      repeats);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return ms;
}

double copy_bandwidth(CudaBackend& backend) {
  const int64_t elements = int64_t{1} << 30;  // 2 GiB of bf16 each way
  DeviceTensor from = tensor(backend, DType::bf16, {elements}, 1),
               to = tensor(backend, DType::bf16, {elements}, 2);
  const double ms = median_ms(backend, [&] { require(backend.copy(from.view, to.view)); });
  return 2.0 * static_cast<double>(from.view.bytes()) / (ms * 1e-3);
}

}  // namespace plumb::bench

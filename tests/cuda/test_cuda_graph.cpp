// E4 on CUDA: a sequence of ops captured once as a CUDA graph and replayed writes the same bits as running it
// eagerly, every replay, and replays read the inputs' current contents (new tokens go in by upload, not by
// recapture).
#include "cuda/check.hpp"
#include "cuda_test_util.hpp"

namespace plumb::cuda {
namespace {

using testing::gpu;

struct Step {
  DeviceTensor x, normed, projected, q, keys, values, positions, attended, best;
  testing::DeviceWeight weight;
};

Step make_step(uint64_t seed) {
  CudaBackend& backend = *gpu();
  Step s;
  s.x = ops::testing::device_bf16(backend, ops::testing::random_bf16(seed, 6 * 1024, -3, 3), {6, 1024});
  s.normed = ops::testing::device_zeros(backend, DType::bf16, {6, 1024});
  s.weight =
      testing::dense_weight(backend, ops::testing::random_bf16(seed + 1, 700 * 1024, -1, 1), 700, 1024);
  s.projected = ops::testing::device_zeros(backend, DType::f32, {6, 700});
  s.q =
      ops::testing::device_bf16(backend, ops::testing::random_bf16(seed + 2, 6 * 8 * 64, -1, 1), {6, 8, 64});
  s.keys = ops::testing::device_bf16(backend, ops::testing::random_bf16(seed + 3, 200 * 2 * 64, -1, 1),
                                     {200, 2, 64});
  s.values = ops::testing::device_bf16(backend, ops::testing::random_bf16(seed + 4, 200 * 2 * 64, -1, 1),
                                       {200, 2, 64});
  s.positions = ops::testing::device_i32(backend, {190, 191, 192, 193, 194, 195});
  s.attended = ops::testing::device_zeros(backend, DType::bf16, {6, 8, 64});
  s.best = ops::testing::device_zeros(backend, DType::i32, {6});
  return s;
}

void run_step(Step& s) {
  CudaBackend& backend = *gpu();
  EXPECT_TRUE(ops::rms_norm(backend, s.x.view, nullptr, 1e-6f, s.normed.view).ok());
  EXPECT_TRUE(ops::matmul(backend, s.normed.view, s.weight.weight, s.projected.view).ok());
  const ops::KvSegment segment{0, 6, {s.keys.view, s.values.view, 196}};
  EXPECT_TRUE(
      ops::attention(backend, s.q.view, s.positions.view, {&segment, 1}, {0, 1.0f}, s.attended.view).ok());
  EXPECT_TRUE(ops::argmax(backend, s.projected.view, s.best.view).ok());
}

std::vector<std::vector<uint8_t>> outputs(Step& s) {
  CudaBackend& backend = *gpu();
  return {ops::testing::download_bytes(backend, s.normed.view),
          ops::testing::download_bytes(backend, s.projected.view),
          ops::testing::download_bytes(backend, s.attended.view),
          ops::testing::download_bytes(backend, s.best.view)};
}

void poison(Step& s) {
  CudaBackend& backend = *gpu();
  for (DeviceTensor* t : {&s.normed, &s.projected, &s.attended, &s.best}) {
    const std::vector<uint8_t> junk(t->view.bytes(), 0x7f);
    EXPECT_TRUE(
        backend
            .upload(TensorView::contiguous(const_cast<uint8_t*>(junk.data()), t->view.dtype, t->view.shape),
                    t->view)
            .ok());
  }
}

TEST(CudaGraph, ReplaysEqualEagerRunsBitForBit) {
  PLUMB_GPU_OR_SKIP();
  CudaBackend& backend = *gpu();
  Step s = make_step(5);
  run_step(s);
  const auto eager = outputs(s);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(backend.stream(), cudaStreamCaptureModeRelaxed), cudaSuccess);
  run_step(s);
  ASSERT_EQ(cudaStreamEndCapture(backend.stream(), &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    poison(s);
    ASSERT_EQ(cudaGraphLaunch(exec, backend.stream()), cudaSuccess);
    const auto replayed = outputs(s);
    for (size_t i = 0; i < eager.size(); ++i)
      testing::expect_same_bits(fmt::format("replay {} output {}", replay, i), replayed[i], eager[i],
                                i == 0 ? 2 : 4);
  }
  // New inputs, uploaded into the same tensors: the replay computes on them.
  const Values fresh = ops::testing::random_bf16(77, 6 * 1024, -3, 3);
  const std::vector<uint16_t> bits = ops::testing::to_bf16_bits(fresh);
  ASSERT_TRUE(backend
                  .upload(TensorView::contiguous(const_cast<uint16_t*>(bits.data()), DType::bf16, {6, 1024}),
                          s.x.view)
                  .ok());
  run_step(s);
  const auto eager_fresh = outputs(s);
  EXPECT_NE(eager_fresh[1], eager[1]) << "the new inputs change the projection";
  poison(s);
  ASSERT_EQ(cudaGraphLaunch(exec, backend.stream()), cudaSuccess);
  const auto replayed = outputs(s);
  for (size_t i = 0; i < eager.size(); ++i)
    testing::expect_same_bits(fmt::format("fresh inputs output {}", i), replayed[i], eager_fresh[i],
                              i == 0 ? 2 : 4);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace plumb::cuda

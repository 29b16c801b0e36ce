// matmul_group on CUDA: each member's rows equal its own ops::matmul bit for bit, whether the group takes the
// decode kernel (affine weights of one code width), the grouped tiled kernel (bf16 at 17 to 32 rows), a tiled
// launch per member with one reduce for them all (bf16 at other row counts) or one launch per member (mixed
// formats).
#include <memory>
#include <tuple>

#include "core/half.hpp"
#include "cuda_test_util.hpp"

namespace plumb::cuda {
namespace {

using testing::decode_gpu;
using testing::ring_gpu;
using testing::tiled_gpu;

struct MemberCase {
  int64_t out, in;
  int bits, group;  // bits 0: dense bf16
};

testing::DeviceWeight make_member(ops::Backend& backend, const MemberCase& c, uint32_t seed) {
  const Values w = ops::testing::random_bf16(seed, c.out * c.in, -0.05, 0.05);
  if (c.bits == 0) return testing::dense_weight(backend, w, c.out, c.in);
  const std::vector<float> floats(w.begin(), w.end());
  return testing::affine_weight(backend, ops::affine_quantize(floats, c.out, c.in, c.bits, c.group), c.out,
                                c.in, c.bits, c.group);
}

std::vector<uint8_t> download(ops::Backend& backend, const DeviceTensor& tensor) {
  return ops::testing::download_bytes(backend, tensor.view);
}

// Runs the group once and each member alone, and compares every member's bytes.
void expect_members_equal(ops::Backend& backend, const std::string& label,
                          const std::vector<MemberCase>& cases,
                          const std::vector<testing::DeviceWeight>& weights, int64_t rows) {
  const int64_t in = cases.front().in;
  const Values x = ops::testing::random_bf16(90, rows * in, -2, 2);
  DeviceTensor tx = ops::testing::device_bf16(backend, x, {rows, in});
  std::vector<DeviceTensor> grouped, alone;
  std::vector<ops::MatmulMember> members;
  for (size_t i = 0; i < cases.size(); ++i) {
    grouped.push_back(ops::testing::device_zeros(backend, DType::bf16, {rows, cases[i].out}));
    alone.push_back(ops::testing::device_zeros(backend, DType::bf16, {rows, cases[i].out}));
  }
  for (size_t i = 0; i < cases.size(); ++i) members.push_back({&weights[i].weight, grouped[i].view});
  const Status status = ops::matmul_group(backend, tx.view, members);
  ASSERT_TRUE(status.ok()) << status.error().message;
  for (size_t i = 0; i < cases.size(); ++i)
    ASSERT_TRUE(ops::matmul(backend, tx.view, weights[i].weight, alone[i].view).ok());
  for (size_t i = 0; i < cases.size(); ++i)
    testing::expect_same_bits(fmt::format("{} rows {} member {}", label, rows, i),
                              download(backend, grouped[i]), download(backend, alone[i]), 2);
}

TEST(CudaMatmulGroup, EachMemberEqualsItsOwnMatmul) {
  PLUMB_GPU_OR_SKIP();
  ASSERT_NE(decode_gpu(), nullptr);
  const std::vector<std::pair<std::string, std::vector<MemberCase>>> groups = {
      {"bf16 q k v", {{4096, 3840, 0, 0}, {2048, 3840, 0, 0}, {2048, 3840, 0, 0}}},
      {"bf16 gate up", {{15360, 3840, 0, 0}, {15360, 3840, 0, 0}}},
      {"bf16 off the tile grid", {{200, 520, 0, 0}, {131, 520, 0, 0}, {64, 520, 0, 0}}},
      {"4-bit g64 q k", {{8192, 3840, 4, 64}, {512, 3840, 4, 64}}},
      {"2-bit g32 q k v", {{4096, 3840, 2, 32}, {2048, 3840, 2, 32}, {2048, 3840, 2, 32}}},
      {"8-bit g128 and 4-bit g64", {{4096, 3840, 8, 128}, {2048, 3840, 4, 64}}},
      {"bf16 and 4-bit g64", {{4096, 3840, 0, 0}, {2048, 3840, 4, 64}}},
  };
  ops::Backend& backend = *decode_gpu();
  for (const auto& [label, cases] : groups) {
    // Made once for every row count: quantizing the weights on the host took most of the test's time.
    std::vector<testing::DeviceWeight> weights;
    for (size_t i = 0; i < cases.size(); ++i) weights.push_back(make_member(backend, cases[i], 80 + i));
    for (int64_t rows : {1, 7, 16, 17, 32, 33}) {
      expect_members_equal(backend, label, cases, weights, rows);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// matmul_geglu against its steps (matmul_group, then geglu) on the same backend: gate, up and out bit for
// bit, with out disjoint and with out = gate (the forward's call).
void expect_geglu_equals_steps(ops::Backend& backend, const std::string& label, const MemberCase& c,
                               const testing::DeviceWeight& gate_w, const testing::DeviceWeight& up_w,
                               int64_t rows) {
  const Values x = ops::testing::random_bf16(72 + rows, rows * c.in, -2, 2);
  DeviceTensor tx = ops::testing::device_bf16(backend, x, {rows, c.in});
  const auto zeros = [&] { return ops::testing::device_zeros(backend, DType::bf16, {rows, c.out}); };
  DeviceTensor gate = zeros(), up = zeros(), out = zeros(), step_gate = zeros(), step_up = zeros();
  const ops::MatmulMember members[] = {{&gate_w.weight, step_gate.view}, {&up_w.weight, step_up.view}};
  ASSERT_TRUE(ops::matmul_group(backend, tx.view, members).ok());
  const std::vector<uint8_t> want_gate = download(backend, step_gate), want_up = download(backend, step_up);
  ASSERT_TRUE(ops::geglu(backend, step_gate.view, step_up.view, step_gate.view).ok());
  const std::vector<uint8_t> want_out = download(backend, step_gate);
  const std::string name = fmt::format("{} rows {}", label, rows);
  Status status =
      ops::matmul_geglu(backend, tx.view, gate_w.weight, up_w.weight, gate.view, up.view, out.view);
  ASSERT_TRUE(status.ok()) << status.error().message;
  testing::expect_same_bits(name + " gate", download(backend, gate), want_gate, 2);
  testing::expect_same_bits(name + " up", download(backend, up), want_up, 2);
  testing::expect_same_bits(name + " out", download(backend, out), want_out, 2);
  status = ops::matmul_geglu(backend, tx.view, gate_w.weight, up_w.weight, gate.view, up.view, gate.view);
  ASSERT_TRUE(status.ok()) << status.error().message;
  testing::expect_same_bits(name + " out in gate", download(backend, gate), want_out, 2);
}

// Each way CUDA runs it: the decode kernel's fused reduce (4-bit in the decode layout; 2- and 8-bit through
// the ring), bf16's reduce launch (1 to 16 rows alone, 17 to 32 grouped), and the steps where the plan has
// one split or the rows are a prompt's (33).
TEST(CudaMatmulGeglu, EqualsItsStepsBitForBit) {
  PLUMB_GPU_OR_SKIP();
  const std::vector<std::tuple<std::string, CudaBackend*, MemberCase>> cases = {
      {"4-bit g64 lanes", decode_gpu(), {15360, 3840, 4, 64}},
      {"2-bit g32 ring", ring_gpu(), {2048, 3840, 2, 32}},
      {"8-bit g128 off the grid", ring_gpu(), {200, 512, 8, 128}},
      {"4-bit g32 lanes", decode_gpu(), {2048, 3840, 4, 32}},
      {"bf16 tiled", tiled_gpu(), {15360, 3840, 0, 0}},
      {"bf16 one split", tiled_gpu(), {32768, 256, 0, 0}},
  };
  for (const auto& [label, backend, c] : cases) {
    ASSERT_NE(backend, nullptr);
    const testing::DeviceWeight gate_w = make_member(*backend, c, 70), up_w = make_member(*backend, c, 71);
    for (int64_t rows : {1, 7, 16, 17, 32, 33}) {
      expect_geglu_equals_steps(*backend, label, c, gate_w, up_w, rows);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace plumb::cuda

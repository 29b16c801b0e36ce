// The CUDA runtime: compiled targets and the refusal rule (no GPU needed), device errors by name, the arena,
// and launch failures reported with the op's name.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/arena.hpp"
#include "cuda/device.hpp"
#include "cuda/launch_order.hpp"
#include "cuda/launchers.hpp"
#include "cuda_test_util.hpp"

namespace plumb::cuda {
namespace {

TEST(CudaRuntime, CompiledTargetsComeFromTheBuild) {
  const std::vector<int> targets = compiled_targets();
  ASSERT_FALSE(targets.empty());
  for (int target : targets) EXPECT_GE(target, 80) << "mma.sync needs sm_80 or later";
}

TEST(CudaRuntime, TargetsParseFromTheBuildsText) {
  EXPECT_EQ(parse_targets("90a"), std::vector<int>{90});
  EXPECT_EQ(parse_targets("90a,80,89,120"), (std::vector<int>{90, 80, 89, 120}));
  EXPECT_EQ(parse_targets("90;80-real;89-virtual"), (std::vector<int>{90, 80, 89}));
  EXPECT_TRUE(parse_targets("").empty());
}

TEST(CudaRuntime, TargetsCoverSameMajorWithAtLeastTheMinor) {
  EXPECT_TRUE(targets_cover({90}, 90));
  EXPECT_FALSE(targets_cover({90}, 75));
  EXPECT_FALSE(targets_cover({90}, 100));
  EXPECT_FALSE(targets_cover({90}, 120));
  EXPECT_TRUE(targets_cover({80, 90}, 86));
  EXPECT_FALSE(targets_cover({89}, 80));
  EXPECT_TRUE(targets_cover({90, 80, 89, 120}, 120));
}

TEST(CudaRuntime, AMissingDeviceIsNamed) {
  auto info = device_info(device_count() + 3);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().message.find("cuda.device: device '"), std::string::npos) << info.error().message;
  EXPECT_NE(info.error().message.find("does not exist"), std::string::npos) << info.error().message;
}

TEST(CudaRuntime, DeviceHasCodeInThisBuild) {
  PLUMB_GPU_OR_SKIP();
  auto info = device_info(0);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_TRUE(targets_cover(compiled_targets(), info->compute_capability())) << info->name;
  EXPECT_GT(info->multiprocessors, 0);
}

TEST(CudaRuntime, CurrentDeviceInfoIsTheCurrentDevicesAndKept) {
  PLUMB_GPU_OR_SKIP();
  int index = -1;
  ASSERT_EQ(cudaGetDevice(&index), cudaSuccess);
  auto read = device_info(index);
  ASSERT_TRUE(read.ok()) << read.error().message;
  const DeviceInfo* kept = current_device_info();
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->index, index);
  EXPECT_EQ(kept->major, read->major);
  EXPECT_EQ(kept->minor, read->minor);
  EXPECT_EQ(kept->multiprocessors, read->multiprocessors);
  EXPECT_EQ(kept->shared_per_block_optin, read->shared_per_block_optin);
  EXPECT_EQ(current_device_info(), kept) << "read once, then the same entry";
  EXPECT_EQ(current_compute_capability(), read->compute_capability());
  EXPECT_EQ(current_multiprocessors(), read->multiprocessors);
  EXPECT_EQ(current_shared_optin(), static_cast<size_t>(read->shared_per_block_optin));
}

TEST(CudaRuntime, ArenaReusesCoalescesAndReturnsDedicatedChunks) {
  PLUMB_GPU_OR_SKIP();
  Arena arena(0, size_t{64} << 20);
  auto a = arena.allocate(1000), b = arena.allocate(3000), c = arena.allocate(10);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (void* p : {*a, *b, *c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % Arena::kAlignment, 0u);
  EXPECT_EQ(arena.reserved_bytes(), size_t{64} << 20);
  arena.release(*a);
  arena.release(*b);
  auto d = arena.allocate(3500);  // fits only in the coalesced space of a and b
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, *a);
  auto big = arena.allocate(size_t{100} << 20);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(arena.reserved_bytes(), (size_t{64} << 20) + (size_t{100} << 20));
  arena.release(*big);
  EXPECT_EQ(arena.reserved_bytes(), size_t{64} << 20);
  EXPECT_GE(arena.peak_in_use_bytes(), size_t{100} << 20);
  arena.release(*c);
  arena.release(*d);
  EXPECT_EQ(arena.in_use_bytes(), 0u);
}

TEST(CudaRuntime, AnImpossibleAllocationNamesTheCall) {
  PLUMB_GPU_OR_SKIP();
  Arena arena(0);
  auto huge = arena.allocate(size_t{1} << 50);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("cuda.arena: call 'cudaMalloc' failed"), std::string::npos)
      << huge.error().message;
}

TEST(CudaRuntime, ALaunchFailureIsReportedWithTheOp) {
  PLUMB_GPU_OR_SKIP();
  ops::Backend& backend = *testing::gpu();
  // 256 query heads over one kv head: valid for the op set, beyond the CUDA kernel's group limit of 128.
  DeviceTensor q = ops::testing::device_zeros(backend, DType::bf16, {1, 256, 8});
  DeviceTensor keys = ops::testing::device_zeros(backend, DType::bf16, {4, 1, 8});
  DeviceTensor values = ops::testing::device_zeros(backend, DType::bf16, {4, 1, 8});
  DeviceTensor positions = ops::testing::device_i32(backend, {0});
  DeviceTensor out = ops::testing::device_zeros(backend, DType::bf16, {1, 256, 8});
  const ops::KvSegment segment{0, 1, {keys.view, values.view, 1}};
  ASSERT_TRUE(ops::attention(backend, q.view, positions.view, {&segment, 1}, {0, 1.0f}, out.view).ok());
  const Status status = backend.synchronize();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("cuda.attention: call 'kernel launch' failed"), std::string::npos)
      << status.error().message;
  EXPECT_TRUE(backend.synchronize().ok()) << "the failure is reported once";
}

TEST(CudaRuntime, UploadRefusesAMismatchByName) {
  PLUMB_GPU_OR_SKIP();
  ops::Backend& backend = *testing::gpu();
  auto tensor = backend.allocate(DType::bf16, {4, 4});
  ASSERT_TRUE(tensor.ok());
  std::vector<uint16_t> host(8);
  const Status status =
      backend.upload(TensorView::contiguous(host.data(), DType::bf16, {2, 4}), tensor->view);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("cuda.upload: tensor 'to' differs from the source"),
            std::string::npos)
      << status.error().message;
}

// Calls of prompt size queue in plain stream order (measured faster there); a scope restores what was before.
TEST(CudaRuntime, PlainLaunchScopesTurnDependentLaunchesOffAndRestoreThem) {
  PLUMB_GPU_OR_SKIP();
  if (!dependent_launch_on()) GTEST_SKIP() << "no dependent launches on this device or switched off";
  {
    const PlainLaunchScope decode_rows(false);
    EXPECT_TRUE(dependent_launch_on());
  }
  {
    const PlainLaunchScope prompt_rows(true);
    EXPECT_FALSE(dependent_launch_on());
    {
      const PlainLaunchScope inner(false);  // an op run inside another keeps the outer's order
      EXPECT_FALSE(dependent_launch_on());
    }
    EXPECT_FALSE(dependent_launch_on());
  }
  EXPECT_TRUE(dependent_launch_on());
}

}  // namespace
}  // namespace plumb::cuda

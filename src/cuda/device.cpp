#include "cuda/device.hpp"
#include "cuda/launch_order.hpp"

#include <cuda_runtime.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "cuda/check.hpp"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace {

constexpr std::string_view kWhere = "cuda.device";

std::string targets_text(const std::vector<int>& targets) {
  std::string text;
  for (int target : targets)
    text += fmt::format("{}{}.{}", text.empty() ? "" : " or ", target / 10, target % 10);
  return text.empty() ? "none" : text;
}

}  // namespace

std::vector<int> parse_targets(std::string_view text) {
  std::vector<int> targets;
  int value = 0;
  bool in_digits = false, skip = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == ',' || c == ';') {
      if (in_digits) targets.push_back(value);
      value = 0;
      in_digits = skip = false;
    } else if (!skip && c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      in_digits = true;
    } else {
      skip = true;
    }
  }
  return targets;
}

std::vector<int> compiled_targets() {
  // CMAKE_CUDA_ARCHITECTURES joined by commas (src/cuda/CMakeLists.txt).
  return parse_targets(PLUMB_CUDA_TARGETS);
}

bool targets_cover(const std::vector<int>& targets, int compute_capability) {
  for (int target : targets)
    if (target / 10 == compute_capability / 10 && target % 10 <= compute_capability % 10) return true;
  return false;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clears the sticky "no driver" error
    return 0;
  }
  return count;
}

Result<DeviceInfo> device_info(int index) {
  const int count = device_count();
  if (index < 0 || index >= count)
    return error_at(kWhere, "device", std::to_string(index), "does not exist",
                    count > 0 ? fmt::format("an index below {}", count) : "a CUDA GPU", "no such device");
  cudaDeviceProp properties{};
  PLUMB_CUDA_TRY(kWhere, cudaGetDeviceProperties(&properties, index));
  DeviceInfo info;
  info.index = index;
  info.name = properties.name;
  info.major = properties.major;
  info.minor = properties.minor;
  info.multiprocessors = properties.multiProcessorCount;
  info.global_bytes = static_cast<int64_t>(properties.totalGlobalMem);
  info.l2_bytes = properties.l2CacheSize;
  info.shared_per_block_optin = static_cast<int64_t>(properties.sharedMemPerBlockOptin);
  info.shared_per_multiprocessor = static_cast<int64_t>(properties.sharedMemPerMultiprocessor);
  return info;
}

Result<DeviceInfo> select_device(int index) {
  auto info = device_info(index);
  if (!info) return info.error();
  const std::vector<int> targets = compiled_targets();
  const std::string got = fmt::format("{}.{}", info->major, info->minor);
  if (!targets_cover(targets, info->compute_capability()))
    return error_at(kWhere, "GPU", info->name, "has no code in this build",
                    fmt::format("compute capability {}", targets_text(targets)), got);
  PLUMB_CUDA_TRY(kWhere, cudaSetDevice(index));
  // The driver must find a kernel image it can load, or every launch would fail later.
  if (probe_kernel_image() != cudaSuccess) {
    (void)cudaGetLastError();
    return error_at(kWhere, "GPU", info->name, "cannot load this build's kernels",
                    fmt::format("compute capability {}", targets_text(targets)), got);
  }
  return info;
}

int current_device_slot() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kCachedDevices) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

const DeviceInfo* current_device_info() {
  struct Known {
    std::once_flag read;
    std::optional<DeviceInfo> info;
  };
  static std::array<Known, kCachedDevices> known;
  const int device = current_device_slot();
  if (device < 0) return nullptr;
  Known& entry = known[static_cast<size_t>(device)];
  std::call_once(entry.read, [&] {
    auto info = device_info(device);
    if (info)
      entry.info = std::move(*info);
    else
      (void)cudaGetLastError();
  });
  return entry.info ? &*entry.info : nullptr;
}

int current_compute_capability() {
  const DeviceInfo* device = current_device_info();
  return device != nullptr ? device->compute_capability() : 0;
}

int current_multiprocessors() {
  const DeviceInfo* device = current_device_info();
  return device != nullptr ? device->multiprocessors : 0;
}

size_t current_shared_optin() {
  const DeviceInfo* device = current_device_info();
  return device != nullptr ? static_cast<size_t>(device->shared_per_block_optin) : 0;
}

bool env_switch_on(const char* variable) {
  const char* value = std::getenv(variable);
  return value == nullptr || std::strcmp(value, "0") != 0;
}

namespace {
thread_local bool plain_launches = false;
}  // namespace

PlainLaunchScope::PlainLaunchScope(bool plain) : before_(plain_launches) {
  plain_launches = before_ || plain;
}
PlainLaunchScope::~PlainLaunchScope() {
  plain_launches = before_;
}

bool dependent_launch_on() {
  // PLUMB_CUDA_DEPENDENT_LAUNCH=0 queues every kernel in plain stream order (to measure what overlap gives).
  static const bool allowed = env_switch_on("PLUMB_CUDA_DEPENDENT_LAUNCH");
  return allowed && !plain_launches && current_compute_capability() >= 90;
}

}  // namespace plumb::cuda

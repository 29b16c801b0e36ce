#pragma once
// Device selection and properties. A GPU is used only when this build carries machine code for it, so a
// kernel never runs through a driver-compiled fallback whose arithmetic nobody checked.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace plumb::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0;
  int minor = 0;
  int multiprocessors = 0;
  int64_t global_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t shared_per_block_optin = 0;
  int64_t shared_per_multiprocessor = 0;

  int compute_capability() const { return major * 10 + minor; }
};

// The compute capabilities this build has machine code for (CMAKE_CUDA_ARCHITECTURES, e.g. {90}).
std::vector<int> compiled_targets();
// The compute capabilities of a targets text ("90a,80-real,89": each entry's leading digits).
std::vector<int> parse_targets(std::string_view text);

// The number of visible GPUs; 0 (not an error) when there is no driver or no device.
int device_count();

Result<DeviceInfo> device_info(int index);

// The calling thread's current device, read once per device and kept for the process, for the launchers'
// choices (capability, multiprocessors, shared memory); nullptr when there is none or it cannot be read.
const DeviceInfo* current_device_info();

// Makes `index` the calling thread's device after checking that this build has code for it; refuses a GPU it
// cannot run by name: "cuda.device: GPU 'NAME' has no code in this build; expected compute capability 9.0,
// got 7.5".
Result<DeviceInfo> select_device(int index);

// Whether a set of compiled targets runs a device of this capability (same major, minor at least the
// target's).
bool targets_cover(const std::vector<int>& targets, int compute_capability);

}  // namespace plumb::cuda

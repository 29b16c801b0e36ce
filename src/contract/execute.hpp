#pragma once
// Gate 1's launch: every buffer sits between guard bytes on the backend's device, outputs are poisoned first,
// and after the launch the guards, the inputs and the outputs come back to be checked.
#include <cstdint>
#include <string>
#include <vector>

#include "contract/call.hpp"
#include "contract/form.hpp"
#include "ops/backend.hpp"

namespace plumb::contract {

inline constexpr size_t kGuardBytes = 256;

// Two poisons, each a NaN with a payload no arithmetic produces: an element holding poison 0 after one
// launch and poison 1 after the other was never written.
uint32_t poison_bits(DType dtype, int poison);

struct Launched {
  std::vector<HostData> outputs;      // the call's outputs with the bytes the launch left
  std::vector<std::string> problems;  // refused launch, damaged guard, changed input
  bool ok() const { return problems.empty(); }
};

Launched launch_call(ops::Backend& backend, const Form& form, const Call& call, int poison);

}  // namespace plumb::contract

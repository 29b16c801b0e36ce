#pragma once
// Gates 1-4 of DESIGN.md §3 for one form on one backend (a real one, or a control's).
#include <cstdint>
#include <string>
#include <vector>

#include "contract/form.hpp"
#include "ops/backend.hpp"

namespace plumb::contract {

struct GateResult {
  Gate gate = Gate::none;
  bool passed = true;
  int64_t launches = 0;
  int64_t checked = 0;  // elements held to a range or compared bit for bit
  std::string failure;  // the first failure: index, range or expected bits, value, seed
};

struct GateOptions {
  uint64_t seed = 1;
  Gate last = Gate::stress;  // gates 1..last run
};

// One result per gate, in order 1..options.last.
std::vector<GateResult> run_gates(const Form& form, ops::Backend& backend, const GateOptions& options);

}  // namespace plumb::contract

#pragma once
// The device enumeration of the decode matmul's dequantization forms (dequant_forms.cu).
#include <cstdint>

namespace plumb::cuda::testing {

struct DequantFormCounts {
  unsigned long long rule_mismatches;       // bits rule != float rule
  unsigned long long packed_mismatches;     // packed pair != reference, where the rule allows it
  unsigned long long subnormal_mismatches;  // subnormal pair != reference, where subnormal_exact allows it
  unsigned long long exact_entries;         // (scale, bias) pairs the rule allows
  unsigned long long subnormal_entries;     // of those, pairs subnormal_exact allows
  unsigned claimed;                         // 1 once a failure was kept below
  uint32_t first_entry, first_code, first_expected, first_got;
};

// Runs every (scale, bias) pair of bf16 bits on device 0; false where a CUDA call failed.
bool enumerate_dequant_forms(DequantFormCounts& counts);

}  // namespace plumb::cuda::testing

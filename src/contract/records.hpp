#pragma once
// Gate 5: each CUDA kernel's resources per target (registers, stack, spills, shared memory), read from the
// compiler's own report (nvcc --resource-usage / -Xptxas -v, or cuobjdump --dump-resource-usage) and held
// to the records kept in the repository. A changed kernel fails until its record is updated; no spills.
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace plumb::contract {

struct KernelResources {
  std::string target;  // "sm_90"
  std::string kernel;  // the mangled entry name
  std::string op;      // records only: the op whose forms check this kernel ("-" until someone says)
  int registers = 0;
  int stack = 0;
  int spill_stores = -1;  // -1: the report does not say (cuobjdump)
  int spill_loads = -1;
  int shared = 0;
};

// The compiler that made a report or records: the "compiler: ..." line (nvcc's build string), or empty.
std::string compiler_of(std::string_view text);

// Entries of a compiler report; several reports may be concatenated. Kernels are sorted by (kernel, target).
Result<std::vector<KernelResources>> parse_compiler_report(std::string_view text);
// The records file: "sm_90 KERNEL op OP registers N stack N spill_stores N spill_loads N shared N" per line.
Result<std::vector<KernelResources>> parse_records(std::string_view text, std::string_view file_name);
std::string format_records(const std::vector<KernelResources>& records, std::string_view compiler);

// One line per problem: a kernel without a record, a record without a kernel, a changed kernel, spills.
std::vector<std::string> compare_records(const std::vector<KernelResources>& records,
                                         const std::vector<KernelResources>& report);
// The report's kernels as records, keeping the op of every kernel the old records already name, and the old
// records of targets the report does not hold.
std::vector<KernelResources> updated_records(const std::vector<KernelResources>& old_records,
                                             const std::vector<KernelResources>& report);

// Names of __global__ functions in CUDA source text, and whether a mangled name holds one.
std::vector<std::string> global_kernel_names(std::string_view cuda_source);
bool mangled_names(std::string_view mangled, std::string_view name);

}  // namespace plumb::contract

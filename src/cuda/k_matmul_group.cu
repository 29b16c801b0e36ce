// Matmuls of one x as one launch (launch_matmul_group), matmul_geglu's gate and up, whose K-split reduce
// adds geglu (launch_matmul_geglu), and matmul_head_norms' q, k and v, whose reduce runs head_norms
// (launch_matmul_head_norms): which kernel takes the group, and each member's part of the scratch. The
// kernels are k_matmul_decode.cu's and the tiled matmul's (k_matmul.cu, k_matmul_tiled_group.cu), and each
// member's plan is its own, so a member's bits are the ones launch_matmul gives it alone.
#include <span>

#include "cuda/k_matmul_tiles.cuh"
#include "cuda/launchers.hpp"
#include "cuda/matmul_plan.hpp"

namespace plumb::cuda {
namespace matmul {

namespace {

// PLUMB_CUDA_MATMUL_GROUP=0 launches a group's members one after another (for A/B in one build).
bool grouped_switch_on() {
  static const bool on = env_switch_on("PLUMB_CUDA_MATMUL_GROUP");
  return on;
}

// The decode kernel takes the whole group where it takes every member, of one code width, and their
// column strips' counters fit (its strips are kTileN columns, k_matmul_fragments.cuh).
bool decode_group_fits(std::span<const MatmulArgs> members, bool decode) {
  size_t strips = 0;
  for (const MatmulArgs& member : members) {
    if (!decode_takes(member, decode) || member.weight.bits != members[0].weight.bits) return false;
    strips += blocks_for(member.weight.out, kTileN);
  }
  return strips <= kMatmulCounters;
}

// Whether gate and up can add geglu in their splits' reduce: one shape, bf16 outputs, several splits.
bool geglu_pair_fits(std::span<const MatmulArgs> members, const RowsArgs& geglu) {
  const MatmulArgs &gate = members[0], &up = members[1];
  return gate.weight.out == up.weight.out && gate.weight.in == up.weight.in && !gate.out_f32 && !up.out_f32 &&
         !geglu.out_f32 && geglu.width == gate.weight.out && geglu.rows == gate.rows &&
         plan_for(gate.rows, gate.weight.out, gate.weight.in).splits > 1;
}

// Each member's part of the scratch, one after another (member_scratch_bytes keeps each aligned).
std::span<void* const> member_areas(std::span<const MatmulArgs> members, void* scratch,
                                    void* (&areas)[kMatmulGroupMembers]) {
  char* next = static_cast<char*>(scratch);
  for (size_t i = 0; i < members.size(); ++i) {
    areas[i] = next;
    next += member_scratch_bytes(members[i]);
  }
  return std::span<void* const>(areas, members.size());
}

// Which kernels take a group in launch_matmul_group.
enum class GroupPath { decode, tiled_group, tiled_members, each };

GroupPath group_path(std::span<const MatmulArgs> members, bool decode) {
  if (!grouped_switch_on() || members.size() < 2) return GroupPath::each;
  if (decode_group_fits(members, decode)) return GroupPath::decode;
  if (tiled_group_fits(members)) return GroupPath::tiled_group;
  return tiled_members_fit(members) ? GroupPath::tiled_members : GroupPath::each;
}

}  // namespace
}  // namespace matmul

size_t matmul_group_scratch_bytes(std::span<const MatmulArgs> members) {
  size_t bytes = 0;
  for (const MatmulArgs& member : members) bytes += matmul::member_scratch_bytes(member);
  return bytes;
}

cudaError_t launch_matmul_group(std::span<const MatmulArgs> members, void* scratch, unsigned* counters,
                                bool decode, cudaStream_t stream) {
  using namespace matmul;
  if (members.empty() || members.size() > kMatmulGroupMembers) return cudaErrorInvalidValue;
  if (members[0].rows == 0) return cudaSuccess;
  void* areas[kMatmulGroupMembers] = {};
  const std::span<void* const> member_area = member_areas(members, scratch, areas);
  switch (group_path(members, decode)) {
    case GroupPath::decode:
      return launch_decode_group(members, member_area, counters, stream);
    case GroupPath::tiled_group:
      return launch_tiled_group(members, member_area, stream);
    case GroupPath::tiled_members:
      return launch_tiled_members(members, member_area, stream);
    case GroupPath::each:
      break;
  }
  for (size_t i = 0; i < members.size(); ++i)
    if (const cudaError_t code = launch_matmul(members[i], areas[i], counters, decode, stream);
        code != cudaSuccess)
      return code;
  return cudaSuccess;
}

cudaError_t launch_matmul_head_norms(std::span<const MatmulArgs> members, const HeadNormsArgs& norms,
                                     const KvWriteArgs* cache, void* scratch, unsigned* counters, bool decode,
                                     cudaStream_t stream) {
  using namespace matmul;
  if (members.size() < 2 || members.size() > kMatmulGroupMembers) return cudaErrorInvalidValue;
  // Where the group takes the tiled kernel (bf16 at decode rows), the split sums' reduce runs head_norms.
  const GroupPath path = members[0].rows > 0 ? group_path(members, decode) : GroupPath::each;
  if ((path == GroupPath::tiled_members || path == GroupPath::tiled_group) &&
      head_norms_reduce_fits(members, norms)) {
    void* areas[kMatmulGroupMembers] = {};
    MemberSums sums[kMatmulGroupMembers] = {};
    const std::span<void* const> member_area = member_areas(members, scratch, areas);
    if (const cudaError_t code = path == GroupPath::tiled_group
                                     ? launch_tiled_group(members, member_area, stream, false, sums)
                                     : launch_tiled_members(members, member_area, stream, sums);
        code != cudaSuccess)
      return code;
    return launch_head_norms_reduce(std::span(sums, members.size()), norms, cache, stream);
  }
  if (const cudaError_t code = launch_matmul_group(members, scratch, counters, decode, stream);
      code != cudaSuccess)
    return code;
  return launch_head_norms(norms, cache, stream);
}

cudaError_t launch_matmul_geglu(std::span<const MatmulArgs> members, const RowsArgs& geglu, void* scratch,
                                unsigned* counters, bool decode, cudaStream_t stream) {
  using namespace matmul;
  if (members.size() != 2) return cudaErrorInvalidValue;
  if (members[0].rows == 0) return cudaSuccess;
  static const bool fused = env_switch_on("PLUMB_CUDA_FUSED_GEGLU");
  const bool grouped = grouped_switch_on();
  void* areas[kMatmulGroupMembers] = {};
  const std::span<void* const> member_area = member_areas(members, scratch, areas);
  if (fused && geglu_pair_fits(members, geglu)) {
    if (grouped && decode_group_fits(members, decode))
      return launch_decode_group(members, member_area, counters, stream, &geglu);
    if (tiled_geglu_fits(members)) return launch_tiled_geglu(members, member_area, geglu, grouped, stream);
  }
  if (const cudaError_t code = launch_matmul_group(members, scratch, counters, decode, stream);
      code != cudaSuccess)
    return code;
  return launch_geglu(geglu, stream);
}

}  // namespace plumb::cuda

// The tiled matmul's groups (launch_tiled_group, launch_tiled_members, launch_tiled_geglu): up to
// kMatmulGroupMembers bf16 matmuls of one x as one launch of matmul_group_kernel, or each on its own tiled
// launch, with one reduce launch for the members' K splits, or gate and up with one reduce that adds geglu.
// Each member's plan is its own and its blocks run k_matmul_pipeline.cuh's matmul_block, so a member's bits
// are the ones launch_matmul gives it alone.
#include <algorithm>
#include <span>

#include "cuda/gelu.cuh"
#include "cuda/k_matmul_pipeline.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda::matmul {

namespace {

// Up to kMatmulGroupMembers bf16 matmuls of one x in one launch: member i's blocks are [first_block[i],
// first_block[i + 1]), numbered as matmul_kernel's grid would be (column tiles, row tiles, then splits), and
// its reduce blocks [first_reduce[i], first_reduce[i + 1]) (none without cross-block splits).
struct GroupParams {
  static_assert(kMatmulGroupMembers == 3, "matmul_group_kernel has a body per member");
  Params member[kMatmulGroupMembers];
  uint32_t first_block[kMatmulGroupMembers + 1];  // 32-bit: a grid's x counts fit, and 32-bit math is short
  uint32_t first_reduce[kMatmulGroupMembers + 1];
  int members;
};

template <int kRowsTile>
__global__ void __launch_bounds__(kThreads, 3)
    matmul_group_kernel(const __grid_constant__ GroupParams group) {
  run_group_member(group, [](const Params& p, int64_t local, int) {
    const auto n_tiles = static_cast<uint32_t>((p.n + kTileN - 1) / kTileN);
    const auto m_tiles = static_cast<uint32_t>((p.rows + kRowsTile - 1) / kRowsTile);
    const uint32_t per_split = n_tiles * m_tiles, at = local;
    matmul_block<kRowsTile, 0, kTileStages<kRowsTile, 0>, true>(
        p, place_tile(at % per_split, n_tiles, m_tiles), at / per_split);
  });
}

__global__ void reduce_group_kernel(const __grid_constant__ GroupParams group) {
  wait_for_previous_kernel();
  const int i = group_member(group.first_reduce, group.members, static_cast<uint32_t>(blockIdx.x));
  const int64_t local = blockIdx.x - group.first_reduce[i];
  reduce_column(group.member[i], local * kThreads + threadIdx.x, blockIdx.y);
}

// matmul_geglu's gate and up (bf16 outputs, one shape, both split across blocks) and geglu's output.
struct GegluPair {
  Params gate, up;
  uint16_t* out;
  int64_t out_stride;
};

// Both members' splits added as reduce_column adds them, then stored with geglu of the two (geglu_bits).
__global__ void reduce_geglu_kernel(const __grid_constant__ GegluPair pair) {
  wait_for_previous_kernel();
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, row = blockIdx.y;
  if (col >= pair.gate.n) return;
  const GegluBits bits = geglu_bits(split_total(pair.gate, col, row), split_total(pair.up, col, row));
  static_cast<uint16_t*>(pair.gate.out)[row * pair.gate.out_stride + col] = bits.gate;
  static_cast<uint16_t*>(pair.up.out)[row * pair.up.out_stride + col] = bits.up;
  pair.out[row * pair.out_stride + col] = bits.out;  // last: out may be gate or up
}

// The grouped tiled kernel takes bf16 weights at 17 to 32 rows (the 32-row tile, one slab). At 1 row the
// grouped 16-row tile made bf16 decode 3.5% slower (q/k/v and gate/up grouped, measured on the H200), at 32
// rows the 32-row one 3.6% faster.
constexpr int kGroupRowsTile = 32;

// The members' planned params, their blocks and their reduce blocks, numbered as GroupParams keeps them.
GroupParams group_params(std::span<const MatmulArgs> members, std::span<void* const> areas) {
  GroupParams group{};
  group.members = static_cast<int>(members.size());
  for (int i = 0; i < group.members; ++i) {
    const MatmulArgs& member = members[i];
    const Plan plan = plan_for(member.rows, member.weight.out, member.weight.in);
    Params& p = group.member[i] = params_for(member, areas[i]);
    apply_plan(p, plan);
    group.first_block[i + 1] = group.first_block[i] + static_cast<uint32_t>(plan.n_tiles * plan.m_tiles *
                                                                            (plan.cross ? plan.splits : 1));
    group.first_reduce[i + 1] =
        group.first_reduce[i] + static_cast<uint32_t>(plan.cross ? blocks_for(p.n, kThreads) : 0);
  }
  return group;
}

// Where member i's sums are after the group's tiled launches, for a reduce launch of the caller's.
void member_sums(const GroupParams& group, MemberSums* sums) {
  for (int i = 0; i < group.members; ++i) {
    const Params& p = group.member[i];
    sums[i] = {p.partial, static_cast<const uint16_t*>(p.out), p.out_stride, p.rows, p.n, p.splits, p.cross};
  }
}

// One reduce_group_kernel launch for every member whose splits run across blocks.
cudaError_t launch_group_reduce(const GroupParams& group, int64_t rows, cudaStream_t stream) {
  if (group.first_reduce[group.members] == 0) return cudaSuccess;
  launch_dependent(
      reduce_group_kernel,
      dim3(static_cast<unsigned>(group.first_reduce[group.members]), static_cast<unsigned>(rows)), kThreads,
      0, stream, group);
  return cudaGetLastError();
}

}  // namespace

bool tiled_group_fits(std::span<const MatmulArgs> members) {
  for (const MatmulArgs& member : members) {
    if (member.weight.affine || member.weight.dense_kind != DenseKind::bf16 || member.rows > kGroupRowsTile ||
        member.rows <= kGroupRowsTile / 2)
      return false;
    // One split a block (matmul_group_kernel keeps one set of sums); at one row tile every plan is.
    const Plan plan = plan_for(member.rows, member.weight.out, member.weight.in);
    if (!plan.cross && plan.splits > 1) return false;
  }
  return true;
}

cudaError_t launch_tiled_group(std::span<const MatmulArgs> members, std::span<void* const> areas,
                               cudaStream_t stream, bool reduce, MemberSums* sums) {
  constexpr int kRowsTile = kGroupRowsTile;
  const GroupParams group = group_params(members, areas);
  using L = Layout<kRowsTile, 0, kTileStages<kRowsTile, 0>>;
  auto kernel = matmul_group_kernel<kRowsTile>;
  cudaError_t code =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kSharedBytes);
  if (code != cudaSuccess) return code;
  launch_dependent(kernel, dim3(static_cast<unsigned>(group.first_block[group.members])), kThreads,
                   L::kSharedBytes, stream, group);
  if ((code = cudaGetLastError()) != cudaSuccess) return code;
  if (sums != nullptr) member_sums(group, sums);
  return reduce ? launch_group_reduce(group, members[0].rows, stream) : cudaSuccess;
}

bool tiled_members_fit(std::span<const MatmulArgs> members) {
  return std::ranges::all_of(members, [](const MatmulArgs& m) {
    return !m.weight.affine && m.weight.dense_kind == DenseKind::bf16 &&
           plan_for(m.rows, m.weight.out, m.weight.in).m_tiles <= 65535;  // one slab, as launch_matmul's
  });
}

cudaError_t launch_tiled_members(std::span<const MatmulArgs> members, std::span<void* const> areas,
                                 cudaStream_t stream, MemberSums* sums) {
  const GroupParams group = group_params(members, areas);
  for (int i = 0; i < group.members; ++i) {
    const Params& p = group.member[i];
    const cudaError_t code = run_any(p, plan_for(p.rows, p.n, p.k), 0, stream);
    if (code != cudaSuccess) return code;
  }
  if (sums == nullptr) return launch_group_reduce(group, members[0].rows, stream);
  member_sums(group, sums);
  return cudaSuccess;
}

bool tiled_geglu_fits(std::span<const MatmulArgs> members) {
  return std::ranges::all_of(members, [](const MatmulArgs& m) {
    return !m.weight.affine && m.weight.dense_kind == DenseKind::bf16 &&
           plan_for(m.rows, m.weight.out, m.weight.in).cross;
  });
}

cudaError_t launch_tiled_geglu(std::span<const MatmulArgs> members, std::span<void* const> areas,
                               const RowsArgs& geglu, bool grouped, cudaStream_t stream) {
  GegluPair pair{{}, {}, static_cast<uint16_t*>(geglu.out), geglu.out_stride};
  Params* params[2] = {&pair.gate, &pair.up};
  const Plan plan = plan_for(members[0].rows, members[0].weight.out, members[0].weight.in);  // one shape
  const bool group = grouped && tiled_group_fits(members);
  for (int i = 0; i < 2; ++i) {
    apply_plan(*params[i] = params_for(members[i], areas[i]), plan);
    if (const cudaError_t code = group ? cudaSuccess : run_any(*params[i], plan, 0, stream);
        code != cudaSuccess)
      return code;
  }
  if (const cudaError_t code = group ? launch_tiled_group(members, areas, stream, false) : cudaSuccess;
      code != cudaSuccess)
    return code;
  launch_dependent(reduce_geglu_kernel,
                   dim3(blocks_for(pair.gate.n, kThreads), static_cast<unsigned>(geglu.rows)), kThreads, 0,
                   stream, pair);
  return cudaGetLastError();
}

}  // namespace plumb::cuda::matmul

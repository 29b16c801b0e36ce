// wgmma m64n128k16 steps (src/cuda/wgmma.cuh) against the chain of mma.sync m16n8k16 steps (src/cuda/mma.cuh)
// that the 16- to 64-row matmul tiles make, on the same bf16 operands and fp32 accumulators, bit for bit: the
// 128-row tile may take wgmma only because the two give the same bits. Inputs cover normal values, wide and
// extreme exponents, exactly cancelling pairs, subnormal products, signed zeros and overflow; accumulators
// normal, +0, -0 and wide; and the first step of a K split starting from nothing (scale-d 0) against mma.sync
// adding to +0. The values walk's form, B N-major (rows of k), is compared the same way, and so are the
// operands swapped: the weight rows as A, x as B, the outputs transposed, by wgmma and by mma.sync itself.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.hpp"
#include "cuda/mma.cuh"
#include "cuda/wgmma.cuh"
#include "cuda/wgmma_steps.hpp"

namespace plumb::cuda::testing {

namespace {

constexpr int kM = 64, kN = 128, kK = 256;
constexpr int kInputKinds = 9, kAccumulatorKinds = 4;

__device__ uint32_t pair_at(const uint16_t* row, int k) {
  return row[k] | static_cast<uint32_t>(row[k + 1]) << 16;
}

// out = c + a[64, K] * b[128, K]^T as mma.sync m16n8k16 steps in order of k, one 16 x 8 tile at a time: a's
// rows as A and b's as B, or with `swapped` b's rows (the weight's) as A and a's (x's) as B, each tile's
// element (i, j) then out[j][i].
__global__ void mma_sync_kernel(const uint16_t* a_all, const uint16_t* b_all, const float* c_all,
                                float* out_all, bool swapped) {
  const size_t block = blockIdx.x;
  const uint16_t* a = a_all + block * kM * kK;
  const uint16_t* b = b_all + block * kN * kK;
  const float* c = c_all + block * kM * kN;
  float* out = out_all + block * kM * kN;
  const uint16_t* rows_a = swapped ? b : a;  // the operands' rows, [.][K]
  const uint16_t* rows_b = swapped ? a : b;
  const int tiles_b = (swapped ? kM : kN) / 8;
  const auto at = [&](int i, int j) { return swapped ? j * kN + i : i * kN + j; };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane / 4, q = lane % 4 * 2;
  for (int tile = warp; tile < (kM / 16) * (kN / 8); tile += blockDim.x / 32) {
    const int m0 = tile / tiles_b * 16, n0 = tile % tiles_b * 8;
    const int outputs[4] = {at(m0 + r, n0 + q), at(m0 + r, n0 + q + 1), at(m0 + r + 8, n0 + q),
                            at(m0 + r + 8, n0 + q + 1)};
    float acc[4] = {c[outputs[0]], c[outputs[1]], c[outputs[2]], c[outputs[3]]};
    for (int k0 = 0; k0 < kK; k0 += 16) {
      const uint32_t fragment[4] = {
          pair_at(rows_a + (m0 + r) * kK, k0 + q), pair_at(rows_a + (m0 + r + 8) * kK, k0 + q),
          pair_at(rows_a + (m0 + r) * kK, k0 + q + 8), pair_at(rows_a + (m0 + r + 8) * kK, k0 + q + 8)};
      mma_bf16(acc, fragment, pair_at(rows_b + (n0 + r) * kK, k0 + q),
               pair_at(rows_b + (n0 + r) * kK, k0 + q + 8));
    }
    for (int e = 0; e < 4; ++e) out[outputs[e]] = acc[e];
  }
}

// The accumulator element (t, e) of a warp of the wgmma chain holds: out[m][n] of x row m and weight row n.
// Swapped, the chain's rows are weight rows (64 a half, tiles 8 t of half t / 8) and its columns x rows.
struct ChainElement {
  int m, n;
  __device__ ChainElement(bool swapped, int warp, int lane, int t, int e) {
    const int row = warp * 16 + fragment_row(lane, e), col = fragment_col(lane, e);
    m = swapped ? t % 8 * 8 + col : row;
    n = swapped ? t / 8 * 64 + row : t * 8 + col;
  }
};

// The same with one warpgroup's wgmma steps from 128-byte-swizzled shared tiles (k_matmul.cu's layout); with
// from_nothing the first step does not accumulate and c is not read. *compiled = 1 where the build has wgmma.
// n_major: B staged as rows of k (two 64-column blocks, as the values walk stages values) and multiplied as
// two m64n64k16 chains of the N-major form. swapped: two m64n64k16 chains, each of 64 weight rows (A) by the
// 64 rows of x (B), both K-major.
__global__ void wgmma_kernel(const uint16_t* a_all, const uint16_t* b_all, const float* c_all, float* out_all,
                             bool from_nothing, WgmmaForm form, int* compiled) {
#if PLUMB_WGMMA
  extern __shared__ __align__(128) char shared_bytes[];
  char* shared = shared_bytes + (1024 - shared_address(shared_bytes) % 1024) % 1024;
  uint4* a_tile = reinterpret_cast<uint4*>(shared);             // [64][64] bf16
  uint4* b_tile = reinterpret_cast<uint4*>(shared + kM * 128);  // [128][64] bf16
  const size_t block = blockIdx.x;
  const uint16_t* a = a_all + block * kM * kK;
  const uint16_t* b = b_all + block * kN * kK;
  const float* c = c_all + block * kM * kN;
  float* out = out_all + block * kM * kN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool n_major = form == WgmmaForm::n_major, swapped = form == WgmmaForm::swapped;
  if (block == 0 && threadIdx.x == 0) *compiled = 1;
  float acc[16][4];
  for (int t = 0; t < 16; ++t)
    for (int e = 0; e < 4; ++e) {
      const ChainElement at(swapped, warp, lane, t, e);
      acc[t][e] = from_nothing ? NAN : c[at.m * kN + at.n];
    }
  for (int kt = 0; kt < kK / 64; ++kt) {
    __syncthreads();
    for (int i = threadIdx.x; i < (kM + kN) * 8; i += blockDim.x) {
      const int row = i / 8, chunk = i % 8;
      const bool is_a = row < kM;
      if (n_major &&
          !is_a) {  // b rows n0 .. n0 + 7 at k = kt * 64 + r: block n0 / 64, row r, chunk n0 % 64 / 8
        const int r = (row - kM) % 64, n0 = (row - kM) / 64 * 64 + chunk * 8;
        alignas(16) uint16_t eight[8];
        for (int n = 0; n < 8; ++n) eight[n] = b[(n0 + n) * kK + kt * 64 + r];
        b_tile[n0 / 64 * 512 + swizzled_chunk(r, chunk)] = *reinterpret_cast<const uint4*>(eight);
        continue;
      }
      const uint16_t* source = is_a ? a + row * kK : b + (row - kM) * kK;
      uint4* tile = is_a ? a_tile : b_tile;
      tile[swizzled_chunk(is_a ? row : row - kM, chunk)] =
          *reinterpret_cast<const uint4*>(source + kt * 64 + chunk * 8);
    }
    fence_async_shared();
    __syncthreads();
    wgmma_fence();
    for (int kk = 0; kk < 4; ++kk) {
      const uint64_t a_step = wgmma_descriptor(shared_address(a_tile) + kk * 32);
      const bool accumulate = !(from_nothing && kt == 0 && kk == 0);
      if (swapped) {  // weight rows half * 64.. as A (8192 bytes a half), x as B
        for (int half = 0; half < 2; ++half)
          wgmma_m64n64k16(reinterpret_cast<float(&)[8][4]>(acc[half * 8]),
                          wgmma_descriptor(shared_address(b_tile) + half * 8192 + kk * 32), a_step,
                          accumulate);
        continue;
      }
      if (!n_major) {
        wgmma_m64n128k16(acc, a_step, wgmma_descriptor(shared_address(b_tile) + kk * 32), accumulate);
        continue;
      }
      for (int block = 0; block < 2; ++block)  // 64 k rows of 128 bytes a block; a k16 step is 16 rows on
        wgmma_m64n64k16<1>(reinterpret_cast<float(&)[8][4]>(acc[block * 8]), a_step,
                           wgmma_descriptor(shared_address(b_tile) + block * 8192 + kk * 2048), accumulate);
    }
    wgmma_commit();
    wgmma_wait<0>();
  }
  for (int t = 0; t < 16; ++t)
    for (int e = 0; e < 4; ++e) {
      const ChainElement at(swapped, warp, lane, t, e);
      out[at.m * kN + at.n] = acc[t][e];
    }
#else
  (void)a_all, (void)b_all, (void)c_all, (void)out_all, (void)from_nothing, (void)form, (void)compiled;
#endif
}

// A standard engine with the few draws the cases need.
struct Rng {
  std::mt19937_64 engine;
  std::normal_distribution<float> gaussian{0.0f, 1.0f};
  uint64_t next() { return engine(); }
  uint16_t bits(int sign_exponent_lo, int span) {  // random sign and mantissa, exponent lo .. lo + span - 1
    return static_cast<uint16_t>((next() & 1) << 15 | (sign_exponent_lo + next() % span) << 7 |
                                 (next() & 127));
  }
  float normal() { return gaussian(engine); }
};

// An input value of `kind` (b operands of kinds 6 to 8 are narrow, so products stay finite or exactly zero).
uint16_t input(Rng& rng, int kind) {
  switch (kind) {
    case 0:
      return f32_to_bf16(rng.normal());
    case 1:
      return rng.bits(127 - 40, 81);  // exponents over 2^+-40
    case 2:
      return rng.bits(64, 127);  // exponents over 2^+-63
    case 3:
      return rng.bits(127 - 3, 7);  // narrow: cancellations (pairs made below)
    case 4:
      return rng.bits(0, 12);  // tiny: subnormal products
    case 5:
      return rng.next() % 4 == 0 ? uint16_t{0x8000} : f32_to_bf16(rng.normal() * 1000.0f);
    case 6:
      return rng.bits(200, 54);  // near overflow
    case 7:
      return static_cast<uint16_t>((rng.next() & 1) << 15);  // signed zeros only
    default:
      return uint16_t{0x8000};  // -0 only
  }
}

float accumulator(Rng& rng, int kind) {
  switch (kind) {
    case 0:
      return rng.normal() * 10.0f;
    case 1:
      return 0.0f;
    case 2:
      return -0.0f;
    default: {
      uint32_t bits = static_cast<uint32_t>(rng.next()) & 0x807fffffu;
      bits |= static_cast<uint32_t>(127 - 60 + rng.next() % 121) << 23;
      float value = 0;
      std::memcpy(&value, &bits, 4);
      return value;
    }
  }
}

template <class T>
struct DeviceBuffer {
  T* data = nullptr;
  explicit DeviceBuffer(size_t count) {
    if (cudaMalloc(&data, count * sizeof(T)) != cudaSuccess) data = nullptr;
  }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

bool compare_wgmma_with_mma_sync(int blocks, WgmmaForm form, WgmmaComparison& result) {
  const size_t a_count = size_t{kM} * kK * blocks, b_count = size_t{kN} * kK * blocks;
  const size_t c_count = size_t{kM} * kN * blocks;
  std::vector<uint16_t> a(a_count), b(b_count);
  std::vector<float> c(c_count), expected(c_count), got(c_count);
  DeviceBuffer<uint16_t> device_a(a_count), device_b(b_count);
  DeviceBuffer<float> device_c(c_count), device_expected(c_count), device_got(c_count);
  DeviceBuffer<int> compiled(1);
  if (!device_a.data || !device_b.data || !device_c.data || !device_expected.data || !device_got.data ||
      !compiled.data || cudaMemset(compiled.data, 0, sizeof(int)) != cudaSuccess)
    return false;
  const int shared = (kM + kN) * 128 + 1024;
  if (cudaFuncSetAttribute(wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared) != cudaSuccess)
    return false;
  Rng rng{std::mt19937_64(0x9e3779b97f4a7c15ull)};
  for (int from_nothing = 0; from_nothing < 2; ++from_nothing)
    for (int kind = 0; kind < kInputKinds; ++kind)
      for (int acc_kind = 0; acc_kind < kAccumulatorKinds; ++acc_kind) {
        if (from_nothing && acc_kind != 1) continue;  // starting from nothing is compared with adding to +0
        if (from_nothing && form == WgmmaForm::mma_sync_swapped) continue;  // mma.sync always adds
        for (uint16_t& value : a) value = input(rng, kind);
        for (uint16_t& value : b) value = input(rng, kind >= 6 ? 3 : kind);
        if (kind == 3) {  // each pair of k steps cancels exactly: a, -a times b, b
          for (size_t i = 0; i + 1 < a.size(); i += 2) a[i + 1] = a[i] ^ 0x8000;
          for (size_t i = 0; i + 1 < b.size(); i += 2) b[i + 1] = b[i];
        }
        for (float& value : c) value = accumulator(rng, acc_kind);
        if (cudaMemcpy(device_a.data, a.data(), a_count * 2, cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemcpy(device_b.data, b.data(), b_count * 2, cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemcpy(device_c.data, c.data(), c_count * 4, cudaMemcpyHostToDevice) != cudaSuccess)
          return false;
        mma_sync_kernel<<<blocks, 128>>>(device_a.data, device_b.data, device_c.data, device_expected.data,
                                         false);
        const bool swapped_sync = form == WgmmaForm::mma_sync_swapped;  // runs on every GPU built for
        if (swapped_sync)
          mma_sync_kernel<<<blocks, 128>>>(device_a.data, device_b.data, device_c.data, device_got.data,
                                           true);
        else
          wgmma_kernel<<<blocks, 128, shared>>>(device_a.data, device_b.data, device_c.data, device_got.data,
                                                from_nothing != 0, form, compiled.data);
        if (cudaDeviceSynchronize() != cudaSuccess) return false;
        int has_wgmma = 0;
        if (!swapped_sync &&
            cudaMemcpy(&has_wgmma, compiled.data, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
          return false;
        result.compiled = swapped_sync || has_wgmma != 0;
        if (!result.compiled) return true;
        if (cudaMemcpy(expected.data(), device_expected.data, c_count * 4, cudaMemcpyDeviceToHost) !=
                cudaSuccess ||
            cudaMemcpy(got.data(), device_got.data, c_count * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
          return false;
        for (size_t i = 0; i < c_count; ++i) {
          uint32_t want = 0, have = 0;
          std::memcpy(&want, &expected[i], 4);
          std::memcpy(&have, &got[i], 4);
          ++result.outputs;
          if (want == have || (std::isnan(expected[i]) && std::isnan(got[i]))) continue;
          if (result.mismatches++ == 0) {
            result.kind = kind;
            result.accumulator = acc_kind;
            result.from_nothing = from_nothing;
            result.index = static_cast<int64_t>(i);
            result.expected = want;
            result.got = have;
          }
        }
      }
  return true;
}

}  // namespace plumb::cuda::testing

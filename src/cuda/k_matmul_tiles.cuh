#pragma once
// The pieces of the tensor-core matmul (k_matmul.cu): tile layout, global-to-shared loads (bf16 x rows, dense
// bf16 weights, MLX affine codes with their scales and biases), the in-kernel dequantization
// w = bf16(scale * q + bias) (scale * q is exact in fp32, so one rounding of the sum, then bf16), and the
// warp's mma over one 64-wide k tile (k16 steps in ascending order into each accumulator); the copies of a
// pipeline stage and the fold of each K split.
#include <cuda_bf16.h>

#include <bit>
#include <cstdint>
#include <type_traits>

#include "cuda/bf16.cuh"
#include "cuda/kernel_args.hpp"
#include "cuda/mma.cuh"
#include "cuda/split_cursor.hpp"
#include "cuda/wgmma.cuh"

namespace plumb::cuda::matmul {

// run(std::integral_constant<int, kBits>{}) for the weight widths the matmul kernels take (0: bf16, else MLX
// affine bits); cudaErrorInvalidValue for any other.
template <class Run>
cudaError_t with_bits(int bits, const Run& run) {
  using std::integral_constant;
  switch (bits) {
    case 0:
      return run(integral_constant<int, 0>{});
    case 2:
      return run(integral_constant<int, 2>{});
    case 3:
      return run(integral_constant<int, 3>{});
    case 4:
      return run(integral_constant<int, 4>{});
    case 5:
      return run(integral_constant<int, 5>{});
    case 6:
      return run(integral_constant<int, 6>{});
    case 8:
      return run(integral_constant<int, 8>{});
    default:
      return cudaErrorInvalidValue;
  }
}

// log2 of an affine group (32, 64 or 128 inputs, checked where weights are made), so that the kernels find a
// group index with a shift.
constexpr int group_shift_of(int group) {
  return std::countr_zero(static_cast<unsigned>(group));
}

constexpr int kTileN = 128;
constexpr int kTileK = 64;
constexpr int kThreads = 256;

struct Params {
  const uint16_t* x;
  int64_t x_stride;
  int64_t rows;
  const uint16_t* dense;   // bf16 [n, k]
  const uint32_t* packed;  // affine [n, k * bits / 32]
  const uint16_t* scales;  // affine bf16 [n, k / group]
  const uint16_t* biases;
  int64_t n, k;
  int group_shift;  // affine groups are 32, 64 or 128 inputs: log2 of it, so each group index is a shift
  void* out;
  bool out_f32;
  int64_t out_stride;
  float* partial;  // cross-block splits: fp32 [splits, rows, n]
  int64_t k_tiles;
  int64_t tiles_per_split;
  int splits;
  bool cross;         // one split per block (blockIdx.z); a reduce kernel adds the partials in split order
  bool x_vector;      // x rows allow 16-byte copies
  bool dense_vector;  // the dense weight allows 16-byte copies
};

// kRowsTile rows by kTileN outputs per block, eight warps; kBits 0 is a dense bf16 weight. A 128-row tile is
// two warpgroups (wgmma.cuh): each warp holds 16 rows by all 128 columns, and two dequantized weight tiles
// alternate so that one can be written while the tensor cores still read the other.
template <int kRowsTile, int kBits, int kStagesChosen = 0>
struct Layout {
  static constexpr bool kWarpgroups = kRowsTile == 128;
  static constexpr int kWarpsM = kRowsTile == 16 ? 1 : kWarpgroups ? 8 : 2;
  static constexpr int kWarpsN = 8 / kWarpsM;
  static constexpr int kWarpRows = kRowsTile / kWarpsM;
  static constexpr int kWarpCols = kTileN / kWarpsN;
  static constexpr int kMTiles = kWarpRows / 16;
  static constexpr int kNTiles = kWarpCols / 8;
  static constexpr int kStages = kStagesChosen != 0 ? kStagesChosen : kBits == 0 ? (kWarpgroups ? 5 : 4) : 6;
  static constexpr int kABytes = kRowsTile * kTileK * 2;
  static constexpr int kCodeWords = kTileN * 2 * kBits;  // two 32-element halves per row
  static constexpr int kBBytes = kBits == 0 ? kTileN * kTileK * 2 : (kCodeWords + kTileN * 2 * 2) * 4;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kDequantizedBytes = kBits == 0 ? 0 : kTileN * kTileK * 2 * (kWarpgroups ? 2 : 1);
  static constexpr int kAlignBytes = kWarpgroups ? 1024 : 0;  // wgmma's swizzle needs 1024-byte aligned tiles
  // write_tile's paired stores: not in the 16-row tile, whose few outputs gain nothing from them while their
  // registers (72 -> 83, so 88 allocated) cost it its third block an SM (1 row: 75.6% -> 65% of the copy
  // bound).
  static constexpr bool kPairedStores = kRowsTile != 16;
  static constexpr int kSharedBytes = kStages * kStageBytes + kDequantizedBytes + kAlignBytes;
};

// Eight consecutive bf16 values of one row, zeros past `left` or for an absent row.
__device__ __forceinline__ uint4 gather8(const uint16_t* source, bool row_present, int64_t left) {
  uint32_t half[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) half[e] = row_present && e < left ? source[e] : 0u;
  return make_uint4(half[0] | half[1] << 16, half[2] | half[3] << 16, half[4] | half[5] << 16,
                    half[6] | half[7] << 16);
}

// A [kTileRows, 64] bf16 tile of a row-major matrix, columns col0.., into swizzled shared memory (zeros
// outside the matrix), one element at a time: for rows or columns not 16-byte aligned.
template <int kTileRows>
__device__ __forceinline__ void gather_rows(uint4* tile, const uint16_t* matrix, int64_t stride, int64_t rows,
                                            int64_t cols, int64_t row0, int64_t col0) {
  for (int i = threadIdx.x; i < kTileRows * 8; i += kThreads) {
    const int r = i / 8, c = i % 8;
    const int64_t row = row0 + r, col = col0 + c * 8;
    const bool present = row < rows && col < cols;
    tile[swizzled_chunk(r, c)] = gather8(matrix + (present ? row * stride + col : 0), present, cols - col);
  }
}

// The 16-byte copies one thread makes of every [kTileRows, 64] bf16 tile of a row-major matrix whose rows
// allow them (zeros outside the matrix): the same rows and chunks at each k tile, so each row's address is
// found once and a tile only adds its column.
template <int kTileRows>
class RowTileCopies {
 public:
  static constexpr int kCopies = (kTileRows * 8 + kThreads - 1) / kThreads;

  __device__ RowTileCopies(const uint16_t* matrix, int64_t stride, int64_t rows, int64_t cols, int64_t row0)
      : cols_(cols) {
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      const int64_t row = row0 + place(j) / 8;
      const bool present = place(j) < kTileRows * 8 && row < rows;
      row_start_[j] = matrix + (present ? row * stride : 0);
      present_ |= present ? 1u << j : 0u;
    }
  }

  // Tile kt (columns kt * 64 ..) into `tile`.
  __device__ __forceinline__ void copy(uint4* tile, int64_t kt) const {
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      if (place(j) >= kTileRows * 8) continue;
      const int64_t col = kt * kTileK + place(j) % 8 * 8;
      const bool valid = (present_ >> j & 1u) != 0 && col < cols_;
      copy16(tile + swizzled_chunk(place(j) / 8, place(j) % 8), row_start_[j] + (valid ? col : 0), valid);
    }
  }

 private:
  __device__ __forceinline__ static int place(int j) {
    return static_cast<int>(threadIdx.x) + j * kThreads;
  }

  const uint16_t* row_start_[kCopies];
  int64_t cols_;
  uint32_t present_ = 0;
};

// The raw affine codes of a [128, 64] weight tile, plus the 4-byte words holding each half-row's scale and
// bias.
template <int kBits>
__device__ __forceinline__ void load_affine(char* stage, const Params& p, int64_t n0, int64_t kt) {
  uint32_t* codes = reinterpret_cast<uint32_t*>(stage);
  uint32_t* scale_words = codes + kTileN * 2 * kBits;
  uint32_t* bias_words = scale_words + kTileN * 2;
  const int64_t row_words = p.k * kBits / 32;
  for (int i = threadIdx.x; i < kTileN * 2 * kBits; i += kThreads) {
    const int r = i / (2 * kBits), w = i % (2 * kBits);
    const int64_t n = n0 + r;
    const bool present = n < p.n && kt * kTileK + (w / kBits) * 32 < p.k;
    copy4(codes + i, p.packed + (present ? n * row_words + kt * 2 * kBits + w : 0), present);
  }
  const int64_t groups = p.k >> p.group_shift;
  const int64_t last = p.n * groups - 1;
  for (int i = threadIdx.x; i < kTileN * 2; i += kThreads) {
    const int64_t n = n0 + i / 2, k_half = kt * kTileK + (i % 2) * 32;
    const bool present = n < p.n && k_half < p.k;
    const int64_t e = present ? n * groups + (k_half >> p.group_shift) : 0;
    if (present && e == last && (e & 1) == 0) {
      // The aligned word holding the very last element would reach past the array: copy it alone.
      scale_words[i] = p.scales[e];
      bias_words[i] = p.biases[e];
    } else {
      copy4(scale_words + i, p.scales + (e & ~int64_t{1}), present);
      copy4(bias_words + i, p.biases + (e & ~int64_t{1}), present);
    }
  }
}

template <int kBits>
__device__ __forceinline__ uint32_t code_at(const uint32_t (&words)[kBits], int j) {
  const int bit = j * kBits, word = bit / 32, shift = bit % 32;
  uint32_t value = words[word] >> shift;
  if (shift + kBits > 32) value |= words[word + 1] << (32 - shift);
  return value & ((1u << kBits) - 1u);
}

__device__ __forceinline__ uint32_t bf16_pair(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&pair);
}

// bf16(product(q) + bias) for one 32-element half-row as four 16-byte chunks, store(q, chunk) for q = 0..3.
template <int kBits, class Product, class Store>
__device__ __forceinline__ void write_dequantized(const uint32_t (&words)[kBits], bool present, float bias,
                                                  Product product, Store store) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    uint32_t pairs[4];
#pragma unroll
    for (int e2 = 0; e2 < 4; ++e2) {
      const int j = q * 8 + e2 * 2;
      const float low = product(code_at<kBits>(words, j)) + bias;
      const float high = product(code_at<kBits>(words, j + 1)) + bias;
      pairs[e2] = present ? bf16_pair(low, high) : 0u;
    }
    store(q, make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]));
  }
}

// bf16(scale * q + bias) for the 32 codes in `words`, as write_dequantized's chunks.
template <int kBits, class Store>
__device__ __forceinline__ void dequantize_words(const uint32_t (&words)[kBits], bool present, float scale,
                                                 float bias, Store store) {
  // scale * q without an int-to-float conversion: m = 2^23 + q as bits, fma(scale, m, -scale * 2^23) is the
  // exact scale * q (representable, and scale * 2^23 is exact), so the sum rounds once as in scale * float(q)
  // + bias. A scale so large that scale * 2^23 could overflow takes the plain conversion, and so does a bias
  // of -0 (where the fma's +0 for q = 0 and the plain -0 of a negative scale would give different signs).
  if (fabsf(scale) < 0x1p100f && !(bias == 0.0f && signbit(bias))) {
    const float offset = -scale * 8388608.0f;
    write_dequantized<kBits>(
        words, present, bias,
        [&](uint32_t code) { return __fmaf_rn(scale, __uint_as_float(code | 0x4b000000u), offset); }, store);
  } else {
    write_dequantized<kBits>(
        words, present, bias, [&](uint32_t code) { return scale * static_cast<float>(code); }, store);
  }
}

// Half-row h of row r (32 codes in `words`) as bf16(scale * q + bias) into the swizzled [128, 64] tile.
template <int kBits>
__device__ __forceinline__ void dequantize_half_row(uint4* tile, int r, int h, const uint32_t (&words)[kBits],
                                                    bool present, float scale, float bias) {
  dequantize_words<kBits>(words, present, scale, bias,
                          [&](int q, uint4 chunk) { tile[swizzled_chunk(r, h * 4 + q)] = chunk; });
}

// The codes of half-row `half` (row half / 2, half half % 2) in a stage ([128 rows][2 halves][kBits words]).
template <int kBits>
__device__ __forceinline__ void half_row_codes(const uint32_t* codes, int half, uint32_t (&words)[kBits]) {
#pragma unroll
  for (int w = 0; w < kBits; ++w) words[w] = codes[half * kBits + w];
}

// Each of 256 threads turns one 32-element half-row of codes into bf16 weights in the swizzled
// [128, 64] tile; the scale and bias come from the words load_affine copied.
template <int kBits>
__device__ __forceinline__ void dequantize(const char* stage, uint4* tile, const Params& p, int64_t n0,
                                           int64_t kt) {
  const uint32_t* codes = reinterpret_cast<const uint32_t*>(stage);
  const uint32_t* scale_words = codes + kTileN * 2 * kBits;
  const uint32_t* bias_words = scale_words + kTileN * 2;
  const int r = threadIdx.x / 2, h = threadIdx.x % 2;
  const int64_t n = n0 + r, k_half = kt * kTileK + h * 32;
  const bool present = n < p.n && k_half < p.k;
  uint32_t words[kBits];
  half_row_codes<kBits>(codes, threadIdx.x, words);
  const int64_t e = present ? n * (p.k >> p.group_shift) + (k_half >> p.group_shift) : 0;
  const int select = (e & 1) ? 16 : 0;
  dequantize_half_row<kBits>(tile, r, h, words, present,
                             bf16_value(static_cast<uint16_t>(scale_words[threadIdx.x] >> select)),
                             bf16_value(static_cast<uint16_t>(bias_words[threadIdx.x] >> select)));
}

// acc[mt][nt] += A[warp rows] * B[warp cols]^T over one 64-wide k tile, k16 steps in order.
template <class L>
__device__ __forceinline__ void multiply(const uint4* a_tile, const uint4* b_tile,
                                         float (&acc)[L::kMTiles][L::kNTiles][4], int warp_m, int warp_n) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < kTileK / 16; ++kk) {
    uint32_t a[L::kMTiles][4];
#pragma unroll
    for (int mt = 0; mt < L::kMTiles; ++mt)
      ldmatrix_x4(a[mt],
                  a_tile + swizzled_chunk(warp_m * L::kWarpRows + mt * 16 + lane % 16, kk * 2 + lane / 16));
    uint32_t b[L::kNTiles][2];
#pragma unroll
    for (int np = 0; np < L::kNTiles / 2; ++np) {
      uint32_t fragment[4];
      const int row = warp_n * L::kWarpCols + np * 16 + lane % 8 + (lane / 16) * 8;
      ldmatrix_x4(fragment, b_tile + swizzled_chunk(row, kk * 2 + (lane / 8) % 2));
      b[2 * np][0] = fragment[0];
      b[2 * np][1] = fragment[1];
      b[2 * np + 1][0] = fragment[2];
      b[2 * np + 1][1] = fragment[3];
    }
#pragma unroll
    for (int mt = 0; mt < L::kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < L::kNTiles; ++nt) mma_bf16(acc[mt][nt], a[mt], b[nt][0], b[nt][1]);
  }
}

template <class L>
using Accumulators = float[L::kMTiles][L::kNTiles][4];

// Copies of one k tile's x rows and weight into a pipeline stage.
template <class L, int kBits>
struct StageLoads {
  static constexpr int kXRows = 16 * L::kWarpsM * L::kMTiles;
  const Params& p;
  char* shared;
  int64_t m0, n0;
  RowTileCopies<kXRows> x_copies{p.x, p.x_stride, p.rows, p.k, m0};
  RowTileCopies<kTileN> dense_copies{p.dense, p.k, p.n, p.k, n0};

  __device__ void x(int slot, int64_t kt) const {
    uint4* tile = reinterpret_cast<uint4*>(shared + slot * L::kStageBytes);
    if (p.x_vector) {
      x_copies.copy(tile, kt);
    } else {
      gather_rows<kXRows>(tile, p.x, p.x_stride, p.rows, p.k, m0, kt * kTileK);
    }
  }

  __device__ void weight(int slot, int64_t kt) const {
    char* stage = shared + slot * L::kStageBytes;
    if constexpr (kBits == 0) {
      uint4* tile = reinterpret_cast<uint4*>(stage + L::kABytes);
      if (p.dense_vector) {
        dense_copies.copy(tile, kt);
      } else {
        gather_rows<kTileN>(tile, p.dense, p.k, p.n, p.k, n0, kt * kTileK);
      }
    } else {
      load_affine<kBits>(stage + L::kABytes, p, n0, kt);
    }
  }

  // The first stages' weights do not depend on earlier launches: the kernel queues them before it waits for
  // those, then the stages' x (the first commit group then holds every queued weight with stage 0's x).
  __device__ void weights_ahead(int stages, int64_t kt0, int64_t tiles) const {
    for (int s = 0; s < stages; ++s)
      if (s < tiles) weight(s, kt0 + s);
  }

  __device__ void x_ahead(int stages, int64_t kt0, int64_t tiles) const {
    for (int s = 0; s < stages; ++s) {
      if (s < tiles) x(s, kt0 + s);
      copy_commit();
    }
  }
};

// At the end of a K split: total = acc for the block's first split, total += acc after; acc restarts at zero
// (wgmma restarts by not accumulating instead).
template <class L, bool kRestart = true>
__device__ __forceinline__ void fold_split(Accumulators<L>& acc, Accumulators<L>& total, bool first) {
  each_fragment_element<L::kMTiles, L::kNTiles>([&](int mt, int nt, int e) {
    total[mt][nt][e] = first ? acc[mt][nt][e] : total[mt][nt][e] + acc[mt][nt][e];
    if constexpr (kRestart) acc[mt][nt][e] = 0.0f;
  });
}

#if PLUMB_WGMMA
// acc += a warpgroup's 64 rows of the x tile (shared address a_rows) times the weight tile (b_tile) over one
// 64-wide k tile, as four k16 wgmma steps in order, left in flight as one group; the first step of a K split
// starts from nothing.
template <class L>
__device__ __forceinline__ void multiply_warpgroup(uint32_t a_rows, uint32_t b_tile, Accumulators<L>& acc,
                                                   bool split_start) {
  const uint64_t a = wgmma_descriptor(a_rows), b = wgmma_descriptor(b_tile);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kTileK / 16; ++kk)
    wgmma_m64n128k16(acc[0], wgmma_step(a, kk), wgmma_step(b, kk), !(split_start && kk == 0));
  wgmma_commit();
}
#endif

}  // namespace plumb::cuda::matmul

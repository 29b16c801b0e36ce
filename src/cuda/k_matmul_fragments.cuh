#pragma once
// Weight fragments of the decode matmul (k_matmul_decode.cu), loaded from global memory straight into the B
// operand registers of mma.sync m16n8k16: lane (g, t) of a warp holds column g's k pairs (2t, 2t + 1) in b0
// and (2t + 8, 2t + 9) in b1 of each 16-wide k step, the layout ldmatrix gives the tiled kernel. bf16 weights
// are loaded a word per register; MLX affine codes come in 16-byte loads (the four lanes of a column load the
// same bytes) and are dequantized in registers to bf16(scale * q + bias), the value k_matmul_tiles.cuh writes
// to shared memory.
#include <cstdint>

#include "cuda/k_matmul_tiles.cuh"

namespace plumb::cuda::matmul {

constexpr int kDecodeWarps = 8;
constexpr int kDecodeThreads = kDecodeWarps * 32;
constexpr int kDecodeNTiles = 2;  // 8-column mma tiles per warp
constexpr int kDecodeWarpCols = 8 * kDecodeNTiles;
constexpr int kDecodeBlockCols =
    kDecodeWarps * kDecodeWarpCols;  // = kTileN: one output tile per block column
static_assert(kDecodeBlockCols == kTileN, "decode blocks cover the tiled kernel's output tiles");

struct DecodeParams {
  const uint16_t* x;
  int64_t x_stride;
  int64_t rows;
  const uint16_t* dense;   // bf16 [n, k]
  const uint32_t* packed;  // affine [n, k * bits / 32]
  const uint16_t* scales;  // affine bf16 [n, k / group]
  const uint16_t* biases;
  int64_t n, k;
  int64_t row_words;  // affine: packed words per row
  int64_t groups;     // affine: groups per row
  int group_shift;    // affine: log2(group)
  void* out;
  bool out_f32;
  int64_t out_stride;
  float* partial;      // fp32 [splits, rows, n] when splits > 1
  unsigned* counters;  // one per block column, zero between launches
  int64_t k_tiles;
  int64_t tiles_per_split;
  int splits;
  int segment_tiles;  // k tiles of x staged in shared memory at a time (a multiple of the ring depth)
  bool x_vector;
};

__device__ __forceinline__ uint32_t load_word(const void* address) {
  uint32_t value;
  asm volatile("ld.global.nc.u32 %0, [%1];\n" : "=r"(value) : "l"(address));
  return value;
}

__device__ __forceinline__ uint32_t load_short(const void* address) {
  unsigned short value;
  asm volatile("ld.global.nc.u16 %0, [%1];\n" : "=h"(value) : "l"(address));
  return value;
}

__device__ __forceinline__ uint4 load_chunk(const void* address) {
  uint4 value;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
               : "l"(address));
  return value;
}

// One 64-wide k tile of a warp's columns: bf16 words, or affine 16-byte code chunks with each 32-wide half's
// scale (low 16 bits) and bias (high 16 bits).
template <int kBits>
struct WeightTile {
  uint4 chunk[kDecodeNTiles][kBits / 2];
  uint32_t scale_bias[kDecodeNTiles][2];
};
template <>
struct WeightTile<0> {
  uint32_t word[kDecodeNTiles][4][2];
};

// Loads tile `kt` of columns [col0, col0 + 16); absent columns and k past the end read address 0 of the
// tensor (always valid) and are zeroed, or for codes, given scale and bias 0.
template <int kBits>
__device__ __forceinline__ void load_tile(WeightTile<kBits>& tile, const DecodeParams& p, int64_t col0,
                                          int64_t kt) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j) {
    const int64_t n = col0 + j * 8 + g;
    const bool column = n < p.n;
    if constexpr (kBits == 0) {
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t k = kt * kTileK + s * 16 + h * 8 + 2 * t;
          const bool present = column && k < p.k;
          const uint32_t word = load_word(p.dense + (present ? n * p.k + k : 0));
          tile.word[j][s][h] = present ? word : 0u;
        }
    } else {
#pragma unroll
      for (int c = 0; c < kBits / 2; ++c) {
        const int64_t word = kt * 2 * kBits + 4 * c;
        const bool present = column && word * 32 / kBits < p.k;
        tile.chunk[j][c] = load_chunk(p.packed + (present ? n * p.row_words + word : 0));
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t k_half = kt * kTileK + h * 32;
        const bool present = column && k_half < p.k;
        const int64_t e = present ? n * p.groups + (k_half >> p.group_shift) : 0;
        const uint32_t scale = load_short(p.scales + e), bias = load_short(p.biases + e);
        tile.scale_bias[j][h] = present ? scale | bias << 16 : 0u;
      }
    }
  }
}

// The lane's weight rows for its columns (clamped to the last column, whose sums are never stored), found
// once per warp so that full k tiles (load_full_tile) load at fixed offsets from them with no predicates.
struct ColumnBase {
  const uint16_t* dense[kDecodeNTiles];   // bf16: the row start, plus the lane's k pair offset 2t
  const uint32_t* packed[kDecodeNTiles];  // affine: the row's code words
  uint32_t group_row[kDecodeNTiles];      // affine: the row's first scale/bias element (< 2^31, checked)
};

__device__ __forceinline__ ColumnBase column_base(const DecodeParams& p, int64_t col0, bool affine) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  ColumnBase base;
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j) {
    const int64_t n = min(col0 + j * 8 + g, p.n - 1);
    base.dense[j] = affine ? nullptr : p.dense + n * p.k + 2 * t;
    base.packed[j] = affine ? p.packed + n * p.row_words : nullptr;
    base.group_row[j] = static_cast<uint32_t>(n * p.groups);
  }
  return base;
}

// load_tile for a k tile wholly inside k: the same values (absent columns aside, which are never stored).
// With groups of 64 or more both 32-wide halves share one scale and bias, read once.
template <int kBits>
__device__ __forceinline__ void load_full_tile(WeightTile<kBits>& tile, const DecodeParams& p,
                                               const ColumnBase& base, int64_t kt) {
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j) {
    if constexpr (kBits == 0) {
      const uint16_t* row = base.dense[j] + kt * kTileK;
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int h = 0; h < 2; ++h) tile.word[j][s][h] = load_word(row + s * 16 + h * 8);
    } else {
      const uint32_t* words = base.packed[j] + kt * 2 * kBits;
#pragma unroll
      for (int c = 0; c < kBits / 2; ++c) tile.chunk[j][c] = load_chunk(words + 4 * c);
      const uint32_t first = base.group_row[j] + static_cast<uint32_t>((kt * kTileK) >> p.group_shift);
      const uint32_t low = load_short(p.scales + first) | load_short(p.biases + first) << 16;
      tile.scale_bias[j][0] = low;
      if (p.group_shift >= 6) {
        tile.scale_bias[j][1] = low;
      } else {
        const uint32_t second =
            base.group_row[j] + static_cast<uint32_t>((kt * kTileK + 32) >> p.group_shift);
        tile.scale_bias[j][1] = load_short(p.scales + second) | load_short(p.biases + second) << 16;
      }
    }
  }
}

template <int I>
__device__ __forceinline__ uint32_t word_of(const uint4& chunk) {
  if constexpr (I == 0) return chunk.x;
  if constexpr (I == 1) return chunk.y;
  if constexpr (I == 2) return chunk.z;
  return chunk.w;
}

// Bit position of code slot `slot` (b0 low, b0 high, b1 low, b1 high) in the lane's shifted word.
constexpr int code_position(int bits, int slot) {
  return bits == 2 ? (slot / 2) * 16 + (slot % 2) * 2 : (slot % 2) * bits;
}

// The scale, bias and fma offsets of one 32-wide half-row, and whether every lane of the warp may take the
// fma form (k_matmul_tiles.cuh's rule: a huge scale or a bias of -0 takes the plain product).
template <int kBits>
struct HalfRow {
  float scale, bias;
  float offset[4];
  bool fast;
};

template <int kBits>
__device__ __forceinline__ HalfRow<kBits> half_row(uint32_t scale_bias) {
  HalfRow<kBits> half;
  half.scale = bf16_value(static_cast<uint16_t>(scale_bias));
  half.bias = bf16_value(static_cast<uint16_t>(scale_bias >> 16));
#pragma unroll
  for (int slot = 0; slot < 4; ++slot)
    half.offset[slot] = -half.scale * static_cast<float>(1 << (23 - code_position(kBits, slot)));
  const bool fast = fabsf(half.scale) < 0x1p100f && !(half.bias == 0.0f && signbit(half.bias));
  half.fast = __all_sync(0xffffffffu, fast);
  return half;
}

// Code at bit kPosition of w as a float 2^(23 - kPosition) + q, by placing its bits in the mantissa.
template <int kBits, int kPosition>
__device__ __forceinline__ float magic_code(uint32_t w) {
  constexpr uint32_t kMask = ((1u << kBits) - 1u) << kPosition;
  return __uint_as_float((w & kMask) | (150u - kPosition) << 23);
}

// bf16(scale * q + bias) for codes at slots kSlot and kSlot + 1 of w, as a bf16 pair (the lower k in the low
// half). scale * q is exact in fp32 either way: fma(scale, 2^e + q, -scale * 2^e), or scale * float(q) when
// some lane of the warp needs the plain form (which gives the same value wherever the fma form applies).
template <int kBits, int kSlot>
__device__ __forceinline__ uint32_t dequantize_pair(uint32_t w, const HalfRow<kBits>& half) {
  constexpr int kLow = code_position(kBits, kSlot), kHigh = code_position(kBits, kSlot + 1);
  constexpr uint32_t kMask = (1u << kBits) - 1u;
  float low, high;
  if (half.fast) {
    low = __fmaf_rn(half.scale, magic_code<kBits, kLow>(w), half.offset[kSlot]) + half.bias;
    high = __fmaf_rn(half.scale, magic_code<kBits, kHigh>(w), half.offset[kSlot + 1]) + half.bias;
  } else {
    low = half.scale * static_cast<float>((w >> kLow) & kMask) + half.bias;
    high = half.scale * static_cast<float>((w >> kHigh) & kMask) + half.bias;
  }
  return bf16_pair(low, high);
}

// b0 and b1 of k step s (0..3) of column tile j from a loaded tile.
template <int kBits, int kStep>
__device__ __forceinline__ void affine_fragment(const WeightTile<kBits>& tile, int j,
                                                const HalfRow<kBits>& half, uint32_t& b0, uint32_t& b1) {
  const int t = threadIdx.x % 4;
  uint32_t first, second;
  if constexpr (kBits == 4) {
    // Step s is words 2s (k 16s..16s+7) and 2s+1; the lane's two codes are byte t of each.
    first = word_of<(2 * kStep) % 4>(tile.chunk[j][kStep / 2]) >> (8 * t);
    second = word_of<(2 * kStep + 1) % 4>(tile.chunk[j][kStep / 2]) >> (8 * t);
  } else if constexpr (kBits == 8) {
    // Step s is chunk s; k 2t, 2t+1 sit in word t/2 at byte 2(t%2), and k + 8 two words on.
    const uint4& chunk = tile.chunk[j][kStep];
    first = ((t & 2) ? chunk.y : chunk.x) >> (16 * (t & 1));
    second = ((t & 2) ? chunk.w : chunk.z) >> (16 * (t & 1));
  } else {
    // Step s is word s (k 16s..16s+15); the lane's codes are bits 4t.. and 16+4t..
    first = second = word_of<kStep>(tile.chunk[j][0]) >> (4 * t);
  }
  b0 = dequantize_pair<kBits, 0>(first, half);
  b1 = dequantize_pair<kBits, 2>(second, half);
}

}  // namespace plumb::cuda::matmul

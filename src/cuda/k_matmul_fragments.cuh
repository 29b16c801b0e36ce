#pragma once
// Weight fragments of the decode matmul (k_matmul_decode.cu) for MLX affine weights: each warp's 16 columns
// of codes, with the 4-byte words holding their scales and biases, are copied a 64-wide k tile at a time
// into a ring of shared-memory slots (cp.async, several tiles ahead, so the bytes in flight do not depend on
// registers). From there lane (g, t) of a warp builds the B operand registers of mma.sync m16n8k16 (column
// g's k pairs (2t, 2t + 1) in b0 and (2t + 8, 2t + 9) in b1 of each 16-wide k step, the layout ldmatrix gives
// the tiled kernel), dequantizing in registers to bf16(scale * q + bias), the value k_matmul_tiles.cuh
// writes to shared memory.
#include <cstdint>

#include "cuda/k_matmul_tiles.cuh"
#include "ops/affine.hpp"

namespace plumb::cuda::matmul {

constexpr int kDecodeWarps = 8;
constexpr int kDecodeThreads = kDecodeWarps * 32;
constexpr int kDecodeNTiles = 2;  // 8-column mma tiles per warp
constexpr int kDecodeWarpCols = 8 * kDecodeNTiles;
constexpr int kDecodeBlockCols =
    kDecodeWarps * kDecodeWarpCols;  // = kTileN: one output tile per block column
static_assert(kDecodeBlockCols == kTileN, "decode blocks cover the tiled kernel's output tiles");

// v, held in a register from here on: the compiler may not recompute it from its inputs inside the tile loop
// (under the launch bounds' register cap it rematerialized such per-lane constants every tile).
__device__ __forceinline__ uint32_t held(uint32_t v) {
  asm volatile("" : "+r"(v));
  return v;
}

struct DecodeParams {
  const uint16_t* x;
  int64_t x_stride;
  int64_t rows;
  const uint32_t* packed;  // [n, k * bits / 32]
  const uint16_t* scales;  // bf16 [n, k / group]
  const uint16_t* biases;
  int64_t n, k;
  int64_t row_words;  // packed words per row
  int64_t groups;     // groups per row
  int group_shift;    // log2(group)
  void* out;
  bool out_f32;
  int64_t out_stride;
  float* partial;      // fp32 [splits, rows, n] when splits > 1
  unsigned* counters;  // one per block column, zero between launches
  int64_t k_tiles;
  int64_t full_tiles;  // k tiles wholly inside k: k / 64
  int64_t tiles_per_split;
  int splits;
  int segment_tiles;  // k tiles of x staged in shared memory at a time
  bool x_vector;
  // The weight's decode layout (k_matmul_decode_lanes.cu), or nullptr: its records, 16-column slices and
  // scale words per column and tile.
  const uint4* lane_records;
  int64_t slices;
  int lane_halves;
  // matmul_geglu's gate and up, both members carrying it (out null: a plain matmul): a column strip's last
  // block of both members' splits adds each one's partials, stores both and out = geglu(gate, up).
  struct {
    const float *gate_partial, *up_partial;
    uint16_t *gate_out, *up_out, *out;
    int64_t gate_stride, up_stride, out_stride;
  } geglu;
};

// Bytes of one warp's codes for one 64-wide k tile: 16 columns of 64 codes.
template <int kBits>
constexpr int kCodeBytes = kDecodeWarpCols* kTileK* kBits / 8;

// The scale and bias words after a slot's codes: [half of the tile][scales, biases][16 columns].
constexpr int kWordBytes = 2 * 2 * kDecodeWarpCols * 4;

template <int kBits>
constexpr int kSlotBytes = kCodeBytes<kBits> + kWordBytes;

// Ring slots per warp: about 4 KiB of codes in flight per warp whatever the width.
template <int kBits>
constexpr int kRingSlots = 4096 / kCodeBytes<kBits>;

// Each lane's share of copying a warp's tile: 16-byte chunks of codes, column by column, and one word of
// scales (lanes 0-15) or biases (lanes 16-31) for its column and each half of the tile: the aligned 4-byte
// word holding the half's element, as the tiled kernel copies it (k_matmul_tiles.cuh). Absent columns copy
// the last column (their sums are never stored); chunks past k are zero, and so are the words of a second
// half past k.
template <int kBits>
struct CodeSource {
  static constexpr int kPerColumn = kBits / 2;  // 64 codes of kBits bits in 16-byte chunks
  static constexpr int kChunks = kDecodeWarpCols * kPerColumn;
  static constexpr int kCopies = (kChunks + 31) / 32;
  // The cursor moves one tile per copy, so nothing here is recomputed per tile; element indices fit 32 bits
  // (matmul_decode_supports).
  const uint32_t* chunk[kCopies];  // the lane's chunk in the next tile to copy
  int chunk_k[kCopies];            // that chunk's first k
  int tile_k;                      // the next tile's first k
  const uint16_t* elements;        // the lane's scale or bias array
  uint32_t row_element;            // its column's first element
  uint32_t last_element;           // the array's last element

  __device__ __forceinline__ CodeSource(const DecodeParams& p, int64_t col0, int64_t kt0) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      const int q = min(lane + 32 * i, kChunks - 1), column = q / kPerColumn, c = q % kPerColumn;
      chunk[i] = p.packed + min(col0 + column, p.n - 1) * p.row_words + 4 * c + kt0 * 2 * kBits;
      chunk_k[i] = static_cast<int>(kt0 * kTileK) + c * (128 / kBits);
    }
    tile_k = static_cast<int>(kt0 * kTileK);
    elements = lane < kDecodeWarpCols ? p.scales : p.biases;
    row_element = held(static_cast<uint32_t>(min(col0 + lane % kDecodeWarpCols, p.n - 1) * p.groups));
    last_element = held(static_cast<uint32_t>(p.n * p.groups - 1));
  }

  // Queues the copy of the next tile into `slot`, and moves to the tile after it.
  __device__ __forceinline__ void copy_next(char* slot, const DecodeParams& p) {
    const int lane = threadIdx.x % 32;
    const int k = static_cast<int>(p.k);
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      const int q = lane + 32 * i;
      if (q >= kChunks) break;
      const bool present = chunk_k[i] < k;
      copy16(slot + q * 16, present ? chunk[i] : p.packed, present);
      chunk[i] += 2 * kBits;
      chunk_k[i] += kTileK;
    }
    uint32_t* words = reinterpret_cast<uint32_t*>(slot + kCodeBytes<kBits>);
    copy_word(words + lane, p, tile_k, k);
    // Groups of 32 give the tile's second half a group of its own.
    if (p.group_shift == 5) copy_word(words + 2 * kDecodeWarpCols + lane, p, tile_k + 32, k);
    tile_k += kTileK;
  }

  __device__ __forceinline__ void copy_word(uint32_t* target, const DecodeParams& p, int k_half,
                                            int k) const {
    const uint32_t e = row_element + (static_cast<uint32_t>(k_half) >> p.group_shift);
    if (k_half >= k) {
      *target = 0u;
    } else if (e == last_element && (e & 1u) == 0u) {
      *target = elements[e];  // the aligned word holding the very last element would reach past the array
    } else {
      copy4(target, elements + (e & ~1u), true);
    }
  }
};

// One 64-wide k tile of a warp's columns: the lane's column's 16-byte code chunks for each of its two column
// tiles, and each 32-wide half's scale (low 16 bits) and bias (high 16 bits).
template <int kBits>
struct WeightTile {
  uint4 chunk[kDecodeNTiles][kBits / 2];
  uint32_t scale_bias[kDecodeNTiles][2];
};

// Reads the lane's codes of a tile from its ring slot, and each half's scale | bias << 16 from the slot's
// words: the element's half of its aligned word (odd elements sit in the high half). Bit j of odd_rows is
// the parity of the first element of column tile j's row; tile_k is the tile's first k (32 bits: k < 2^31).
template <int kBits>
__device__ __forceinline__ void read_tile(WeightTile<kBits>& tile, const char* slot, uint32_t odd_rows,
                                          uint32_t tile_k, int group_shift) {
  const int g = threadIdx.x % 32 / 4;
  const uint32_t* words = reinterpret_cast<const uint32_t*>(slot + kCodeBytes<kBits>);
  const uint32_t groups[2] = {tile_k >> group_shift, (tile_k + 32u) >> group_shift};
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j) {
    const int column = j * 8 + g;
#pragma unroll
    for (int c = 0; c < kBits / 2; ++c)
      tile.chunk[j][c] = *reinterpret_cast<const uint4*>(slot + (column * (kBits / 2) + c) * 16);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (h == 1 && group_shift != 5) {  // groups of 64 or more: both halves share one group
        tile.scale_bias[j][1] = tile.scale_bias[j][0];
        continue;
      }
      const uint32_t* half = words + h * 2 * kDecodeWarpCols;
      // Selector 0x5410 takes both words' low halves, 0x7632 (= 0x5410 + 0x2222) their high halves.
      const uint32_t odd = (groups[h] ^ odd_rows >> j) & 1u;
      tile.scale_bias[j][h] =
          __byte_perm(half[column], half[kDecodeWarpCols + column], 0x5410u + odd * 0x2222u);
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

// d = a * b + c on bf16 pairs, rounded once.
__device__ __forceinline__ uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
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

// b0 and b1 of k step kStep (0..3) of column tile j from a loaded tile, through f32 (two roundings).
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

// Whether a tile may take packed_fragment: 2- and 4-bit codes (128 + q is exact in bf16 below 2^7).
template <int kBits>
constexpr bool kPackable = kBits == 2 || kBits == 4;

// (a & mask) | bits in one instruction (ptxas leaves the and and the or of constants apart).
__device__ __forceinline__ uint32_t and_or(uint32_t a, uint32_t mask, uint32_t bits) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(a), "r"(mask), "r"(bits));
  return d;
}

// The lane's codes of k step kStep of column tile j as bf16 pairs 128 + q, (2t, 2t + 1) in p0 and
// (2t + 8, 2t + 9) in p1 (the lower k in the low half).
template <int kBits, int kStep>
__device__ __forceinline__ void magic_pairs(const WeightTile<kBits>& tile, int j, uint32_t& p0,
                                            uint32_t& p1) {
  constexpr uint32_t kMagic = 0x43004300u;  // bf16 128 in both halves
  const int t = threadIdx.x % 4;
  if constexpr (kBits == 4) {
    // Byte t of words 2s and 2s + 1 holds codes (2t, 2t + 1) and (2t + 8, 2t + 9); x * 0x1001 puts the
    // byte's high nibble at bit 16 (x < 256, so no carries).
    const uint32_t first = __byte_perm(word_of<(2 * kStep) % 4>(tile.chunk[j][kStep / 2]), 0u, 0x4440u | t);
    const uint32_t second =
        __byte_perm(word_of<(2 * kStep + 1) % 4>(tile.chunk[j][kStep / 2]), 0u, 0x4440u | t);
    p0 = and_or(first * 0x1001u, 0x000f000fu, kMagic);
    p1 = and_or(second * 0x1001u, 0x000f000fu, kMagic);
  } else {
    // Word s holds k 16s..16s+15; after >> 4t the lane's codes sit at bits 0, 2, 16 and 18.
    const uint32_t x = word_of<kStep>(tile.chunk[j][0]) >> (4 * t);
    p0 = and_or(x, 0x3u, and_or(x << 14, 0x30000u, kMagic));
    p1 = and_or(x >> 16, 0x3u, and_or(x >> 2, 0x30000u, kMagic));
  }
}

// bf16(scale * q + bias) for a pair of codes given as bf16 128 + q: 128 + q - 128 is exact, then one fma
// rounds scale * q + bias once, which equals the two roundings wherever ops::affine_single_rounding_exact
// holds.
__device__ __forceinline__ uint32_t packed_pair(uint32_t magic, uint32_t scale_pair, uint32_t bias_pair) {
  const uint32_t q = fma_bf16x2(magic, 0x3f803f80u, 0xc300c300u);
  return fma_bf16x2(scale_pair, q, bias_pair);
}

// Each half-row's scale and bias as bf16 pairs (the same value in both halves, the scale's exponent shifted
// per half for subnormal_fragment), for packed_fragment and subnormal_fragment.
struct PackedPairs {
  uint32_t scale[kDecodeNTiles][2], bias[kDecodeNTiles][2];
};

// scale_offset is added to each scale pair's bits (subnormal_fragment's exponent shifts; 0 for packed).
template <int kBits>
__device__ __forceinline__ PackedPairs packed_pairs(const WeightTile<kBits>& tile, uint32_t scale_offset) {
  PackedPairs pairs;
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      pairs.scale[j][half] = __byte_perm(tile.scale_bias[j][half], 0u, 0x1010u) + scale_offset;
      pairs.bias[j][half] = __byte_perm(tile.scale_bias[j][half], 0u, 0x3232u);
    }
  return pairs;
}

// b0 and b1 of k step kStep of column tile j where every half-row of the tile allows one rounding.
template <int kBits, int kStep>
__device__ __forceinline__ void packed_fragment(const WeightTile<kBits>& tile, const PackedPairs& pairs,
                                                int j, uint32_t& b0, uint32_t& b1) {
  uint32_t p0, p1;
  magic_pairs<kBits, kStep>(tile, j, p0, p1);
  b0 = packed_pair(p0, pairs.scale[j][kStep / 2], pairs.bias[j][kStep / 2]);
  b1 = packed_pair(p1, pairs.scale[j][kStep / 2], pairs.bias[j][kStep / 2]);
}

// The subnormal form of 4-bit codes: byte t of a word holds the lane's codes q0 (low nibble) and q1 (high
// nibble); copied to bytes 0 and 2 and masked, they are the bf16 bits of q0 * 2^-133 and q1 * 2^-129 (the
// subnormals and the first normal binade are spaced 2^-133 alike). One fma with the scale pair (scale *
// 2^133, scale * 2^129) then gives scale * q + bias rounded once: the products are exact, and the shifted
// scales are exact normal bf16 values while 2^-100 <= |scale| < 2^-5.
constexpr uint32_t kSubnormalScaleOffset = (133u << 7) | (129u << 23);

__device__ __forceinline__ uint32_t subnormal_pair(uint32_t word, uint32_t selector, uint32_t scale_pair,
                                                   uint32_t bias_pair) {
  return fma_bf16x2(scale_pair, __byte_perm(word, 0u, selector) & 0x00f0000fu, bias_pair);
}

// Byte t of the word into bytes 0 and 2 of the result, zeros elsewhere.
__device__ __forceinline__ uint32_t subnormal_selector() {
  return 0x4040u | (threadIdx.x % 4) * 0x0101u;
}

// b0 and b1 of k step kStep of column tile j of 4-bit codes, from subnormal pairs.
template <int kStep>
__device__ __forceinline__ void subnormal_fragment(const WeightTile<4>& tile, const PackedPairs& pairs, int j,
                                                   uint32_t& b0, uint32_t& b1) {
  const uint32_t selector = subnormal_selector();
  const uint4& chunk = tile.chunk[j][kStep / 2];
  b0 = subnormal_pair(word_of<(2 * kStep) % 4>(chunk), selector, pairs.scale[j][kStep / 2],
                      pairs.bias[j][kStep / 2]);
  b1 = subnormal_pair(word_of<(2 * kStep + 1) % 4>(chunk), selector, pairs.scale[j][kStep / 2],
                      pairs.bias[j][kStep / 2]);
}

// Which forms one half-row's scale | bias << 16 allows: one rounding (ops::affine_single_rounding_exact_bits)
// and, with |scale| < 2^-5 as well, subnormal_pair (scale * 2^133 stays a finite bf16). Bitwise tests, so
// the compiler makes no branches of them.
struct FormTests {
  bool exact, subnormal;
};

__device__ __forceinline__ FormTests form_tests(uint32_t scale_bias) {
  const uint32_t s = scale_bias & 0x7fffu, b = scale_bias >> 16 & 0x7fffu;
  const bool bias_allows = (b < 0x7180u) & ((b == 0u) | (b + 0x0780u >= s));
  const bool one_rounding = s - 0x0d80u < 0x7180u - 0x0d80u, small_scale = s - 0x0d80u < 0x3d00u - 0x0d80u;
  return {static_cast<bool>(bias_allows & one_rounding), static_cast<bool>(bias_allows & small_scale)};
}

// How a tile's codes become weights, decided for the whole warp: subnormal pairs where every half-row of
// every lane allows them (4-bit), packed pairs where every one allows one rounding (2- and 4-bit), else
// through f32 with two roundings. A half-row that allows subnormal pairs allows one rounding.
enum class TileForm { f32, packed, subnormal };

template <int kBits>
__device__ __forceinline__ TileForm tile_form(const WeightTile<kBits>& tile, int group_shift) {
  if constexpr (!kPackable<kBits>) {
    return TileForm::f32;
  } else {
    bool exact = true, subnormal = true;
#pragma unroll
    for (int j = 0; j < kDecodeNTiles; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (h == 1 && group_shift != 5) continue;  // the same group as half 0
        const FormTests tests = form_tests(tile.scale_bias[j][h]);
        exact &= tests.exact;
        subnormal &= tests.subnormal;
      }
    if (kBits == 4 && __all_sync(0xffffffffu, subnormal)) return TileForm::subnormal;
    return __all_sync(0xffffffffu, exact) ? TileForm::packed : TileForm::f32;
  }
}

}  // namespace plumb::cuda::matmul

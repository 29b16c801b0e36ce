#pragma once
// bf16 bits <-> f32 on the device, bit-identical to core/half.hpp (quiet NaN keeps its sign and top payload
// bits).
#include <cstdint>

namespace plumb::cuda {

__device__ __forceinline__ float bf16_value(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

__device__ __forceinline__ uint16_t bf16_bits(float value) {
  const uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float round_bf16(float value) {
  return bf16_value(bf16_bits(value));
}

// The eight bf16 values of a 16-byte word (the lower half of each 32-bit word first) as floats, exactly.
__device__ __forceinline__ void unpack_bf16x8(const uint4& packed, float (&out)[8]) {
  const uint32_t words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    out[2 * j] = bf16_value(static_cast<uint16_t>(words[j] & 0xffffu));
    out[2 * j + 1] = bf16_value(static_cast<uint16_t>(words[j] >> 16));
  }
}

// Eight floats as bf16 (each rounded once) in one 16-byte word, in unpack_bf16x8's order.
__device__ __forceinline__ uint4 pack_bf16x8(const float (&values)[8]) {
  uint32_t words[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    words[j] = bf16_bits(values[2 * j]) | static_cast<uint32_t>(bf16_bits(values[2 * j + 1])) << 16;
  return make_uint4(words[0], words[1], words[2], words[3]);
}

// Whether bf16 rows from `pointer`, `stride` elements apart, all start 16 bytes aligned (8 elements a load).
__host__ __device__ inline bool rows_aligned16(const void* pointer, int64_t stride) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0 && stride % 8 == 0;
}

__host__ __device__ inline unsigned blocks_for(int64_t items, int per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

}  // namespace plumb::cuda

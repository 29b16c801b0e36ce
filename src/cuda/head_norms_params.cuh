#pragma once
// head_norms' kernel parameters, shared by its two kernels (k_norm.cu's for any head_dim, k_head_norms.cu's
// for the head_dims it holds in registers), and where a kv vector's bits go in its stream's cache.
#include <cstdint>

#include "cuda/kernel_args.hpp"
#include "cuda/kv_segments.cuh"

namespace plumb::cuda {

constexpr int kMaxRopePairs = 512;
// Streams whose caches head_norms writes in its own launch; more take a kv_write launch after it.
constexpr int kHeadNormsSegments = 48;

struct HeadNormsParams {
  RmsNormArgs v, q, k;
  const int32_t* positions;
  int64_t cache_row;  // kv_heads * head_dim: the elements of a cache slot
  int segment_count;  // caches in `segments`; 0: none
  KvSegmentEntry segments[kHeadNormsSegments];
  float inv_freq[kMaxRopePairs];
};
static_assert(sizeof(HeadNormsParams) <= 4096, "head_norms' kernel parameters exceed 4 KiB");

// head_norms' kernel parameters for a launch (k_norm.cu); with more streams' caches than the table holds it
// stays empty (segment_count 0), and the caches take kv_write's own launch.
HeadNormsParams head_norms_params(const HeadNormsArgs& launch, const KvWriteArgs* cache);

// Where kv vector (r, h)'s key and value go in row r's cache (kv_write's slot), or nulls without caches.
__device__ __forceinline__ void cache_at(const HeadNormsParams& params, int64_t r, int64_t h, int64_t dim,
                                         uint16_t*& keys, uint16_t*& values) {
  if (params.segment_count == 0) return;
  const KvSegmentEntry& segment = segment_of_row(params.segments, params.segment_count, r);
  const int64_t at = params.positions[r] % segment.capacity * params.cache_row + h * dim;
  keys = segment.cache_keys + at;
  values = segment.cache_values + at;
}

// A launch's vector `vector` (a half-warp's): the q vectors, then the kv vectors. Returns its norm (q's or
// k's) and sets its row and head, whether the launch has it, and whether it is a q vector.
__device__ __forceinline__ const RmsNormArgs& head_norms_vector(const HeadNormsParams& params, int64_t vector,
                                                                int64_t& r, int64_t& h, bool& active,
                                                                bool& is_q) {
  const int64_t q_vectors = params.q.rows * params.q.heads;
  active = vector < q_vectors + params.k.rows * params.k.heads;
  is_q = vector < q_vectors;
  const RmsNormArgs& norm = is_q ? params.q : params.k;
  const int64_t index = is_q ? vector : vector - q_vectors;
  r = index / norm.heads;
  h = index % norm.heads;
  return norm;
}

// k_head_norms.cu: whether a call takes the register kernel (head_dim even up to 16, or 32, 64, 128 or 256,
// and up to 63 rows; none with PLUMB_CUDA_HEAD_NORMS_LANES=0, for A/B in one build), and its launch over
// `vectors` q and kv vectors.
bool head_norms_lanes_fit(int64_t dim, int64_t rows);
cudaError_t launch_head_norms_lanes(const HeadNormsParams& params, int64_t vectors, cudaStream_t stream);

}  // namespace plumb::cuda

// The keyed draw of ops/keyed_draw.hpp in three kernels: a summary per row (greedy rows end there), the
// weights over the whole grid, then the selects, a cluster of blocks per logits row (RowGroup). Reproduces
// the host's sort with radix selects over the 64-bit rank keys: each select finds the largest key whose
// members at or above it reach an integer target (a count for top-k, a weight for top-p and the draw). Each
// block histograms its share of the row; every block then reads all the cluster's histograms (distributed
// shared memory) and makes the same choice. Every sum is an integer, so the order of the atomics and of the
// blocks never changes a bit. No float rounding beyond keyed_draw.hpp's steps.
#include <cooperative_groups.h>

#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"
#include "ops/keyed_draw.hpp"

namespace plumb::cuda {

namespace {

namespace cg = cooperative_groups;
namespace keyed = ops::keyed;

constexpr int kThreads = 512;

// The blocks that share a row: a cluster of kSampleClusterBlocks from sm_90 on, reading each other's shared
// memory (32 rows fill 256 block slots, one wave at two blocks per SM); before sm_90 the same code runs as
// one block per row.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define PLUMB_ROW_CLUSTER
struct RowGroup {
  static constexpr unsigned kBlocks = 1;
  __device__ unsigned block_rank() const { return 0; }
  __device__ void sync() { __syncthreads(); }
  template <class T>
  __device__ T* map_shared_rank(T* pointer, unsigned) const {
    return pointer;
  }
};
#else
#define PLUMB_ROW_CLUSTER __cluster_dims__(kSampleClusterBlocks, 1, 1)
struct RowGroup {
  static constexpr unsigned kBlocks = kSampleClusterBlocks;
  cg::cluster_group cluster = cg::this_cluster();
  __device__ unsigned block_rank() const { return cluster.block_rank(); }
  __device__ void sync() { cluster.sync(); }
  template <class T>
  __device__ T* map_shared_rank(T* pointer, unsigned rank) const {
    return cluster.map_shared_rank(pointer, rank);
  }
};
#endif
constexpr int kWarps = kThreads / 32;
constexpr int kBuckets = 1 << 11;
// The rank key's digits from the top, 11 + 11 + 10 bits of logit, then the same of id.
constexpr int kDigitCount = 6;
__device__ __forceinline__ int digit_bits(int digit) {
  return digit % 3 == 2 ? 10 : 11;
}

// A bucket's weight is 64 bits kept as two 32-bit words: shared memory adds 32-bit integers natively, and
// a 64-bit add would be a compare-and-swap loop that contends on the few crowded top buckets.
struct Shared {
  unsigned sum_low[kBuckets];
  unsigned sum_high[kBuckets];
  unsigned counts[kBuckets];
  unsigned long long warp_totals[kWarps];
  unsigned long long block_total;  // this block's part of a cluster sum
  unsigned long long found_key;    // a find pass's key, where `found`
  unsigned found;
  unsigned chosen_digit;
  unsigned chosen_count;
  unsigned long long chosen_above;
  float best_value, top;  // this block's summary
  int best_id;
  unsigned finite;
  float warp_best[kWarps], warp_top[kWarps];
  int warp_best_id[kWarps];
  unsigned warp_finite[kWarps];
};

// This block's share of a row: elements first, first + stride, ...
struct Slice {
  const SampleArgs* a;
  int64_t row;
  int64_t first;
  int64_t stride;

  __device__ __forceinline__ float logit(int64_t i) const {
    const int64_t at = row * a->x_stride + i;
    return a->x_f32 ? static_cast<const float*>(a->x)[at]
                    : bf16_value(static_cast<const uint16_t*>(a->x)[at]);
  }
};

// Passes take kBatch elements per thread per step, loads first: each step waits on memory once, not
// kBatch times. Elements past the row read as NaN, which no pass counts.
constexpr int kBatch = 4;

__device__ __forceinline__ void load_batch(const Slice& slice, int64_t base, float (&logits)[kBatch]) {
#pragma unroll
  for (int u = 0; u < kBatch; ++u) {
    const int64_t i = base + u * slice.stride;
    logits[u] = i < slice.a->width ? slice.logit(i) : NAN;
  }
}

// Who takes part in a select or a sum: finite, ranked at or above `lower`, weight at least `min_weight`.
struct Members {
  uint64_t lower = 0;
  uint64_t min_weight = 0;
};

__device__ __forceinline__ bool member(float logit, uint64_t key, uint64_t weight, const Members& m) {
  return isfinite(logit) && key >= m.lower && weight >= m.min_weight;
}

__device__ __forceinline__ uint64_t bucket_sum(const Shared& s, unsigned digit) {
  return (static_cast<uint64_t>(s.sum_high[digit]) << 32) | s.sum_low[digit];
}

// Adds one member to its bucket. Lanes of a warp that share a bucket add once, through their leader: the
// top digit puts most of a row into a few buckets. Weights are below 2^44, so 26-bit and 18-bit halves sum
// over 32 lanes without overflow.
__device__ __forceinline__ void add_to_bucket(Shared& s, unsigned digit, uint64_t value) {
  const unsigned peers = __match_any_sync(__activemask(), digit);
  const unsigned low = __reduce_add_sync(peers, static_cast<unsigned>(value & 0x3ffffffu));
  const unsigned high = __reduce_add_sync(peers, static_cast<unsigned>(value >> 26));
  if (static_cast<int>(threadIdx.x % 32) != __ffs(peers) - 1) return;
  atomicAdd(&s.counts[digit], static_cast<unsigned>(__popc(peers)));
  const uint64_t sum = (static_cast<uint64_t>(high) << 26) + low;
  const unsigned add_low = static_cast<unsigned>(sum), add_high = static_cast<unsigned>(sum >> 32);
  const unsigned before = atomicAdd(&s.sum_low[digit], add_low);
  atomicAdd(&s.sum_high[digit], add_high + (before + add_low < before ? 1u : 0u));
}

// The sum of `value` over every thread of the group.
__device__ uint64_t cluster_sum(RowGroup& group, Shared& s, unsigned long long value) {
  for (int offset = 16; offset >= 1; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  if (threadIdx.x == 0) s.block_total = 0;
  __syncthreads();
  if (threadIdx.x % 32 == 0) atomicAdd(&s.block_total, value);
  group.sync();
  uint64_t total = 0;
  for (unsigned rank = 0; rank < RowGroup::kBlocks; ++rank)
    total += *group.map_shared_rank(&s.block_total, rank);
  group.sync();  // no block rewrites its total before every block has read it
  return total;
}

// Exclusive prefix of `value` over threads 0, 1, ... of the block (integers: exact in any order).
__device__ unsigned long long block_exclusive_scan(Shared& s, unsigned long long value) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned long long inclusive = value;
  for (int offset = 1; offset < 32; offset *= 2) {
    const unsigned long long other = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  if (lane == 31) s.warp_totals[warp] = inclusive;
  __syncthreads();
  unsigned long long before = 0;
  for (int w = 0; w < warp; ++w) before += s.warp_totals[w];
  __syncthreads();
  return before + inclusive - value;
}

// A bucket of the cluster: its weight (or count) and count summed over every block's histogram.
__device__ __forceinline__ void cluster_bucket(RowGroup& group, Shared& s, unsigned digit, uint64_t* sum,
                                               unsigned* count) {
  *sum = 0, *count = 0;
  for (unsigned rank = 0; rank < RowGroup::kBlocks; ++rank) {
    const Shared* remote = group.map_shared_rank(&s, rank);
    *sum += bucket_sum(*remote, digit);
    *count += remote->counts[digit];
  }
}

// After every block's histogram is complete: the digit at which the members reach `target`, from the
// cluster's summed buckets. Thread t owns the buckets [buckets - (t + 1) * per, buckets - t * per), the
// highest digits first; every block computes the same choice.
__device__ void choose_digit(RowGroup& group, Shared& s, unsigned buckets, uint64_t above, uint64_t target) {
  const unsigned per = buckets > kThreads ? buckets / kThreads : 1u;
  const unsigned top = buckets - threadIdx.x * per;  // one past this thread's highest digit
  const bool owns = threadIdx.x * per < buckets;
  uint64_t sum = 0;
  unsigned count = 0;
  unsigned long long own = 0;
  for (unsigned d = top; owns && d-- > top - per;) {
    cluster_bucket(group, s, d, &sum, &count);
    own += sum;
  }
  const unsigned long long before = above + block_exclusive_scan(s, own);
  if (own > 0 && before < target && before + own >= target) {
    unsigned long long running = before;
    for (unsigned d = top; d-- > top - per;) {  // the crossing thread reads its buckets again
      cluster_bucket(group, s, d, &sum, &count);
      if (running + sum >= target) {
        s.chosen_digit = d;
        s.chosen_above = running;
        s.chosen_count = count;
        break;
      }
      running += sum;
    }
  }
  __syncthreads();
}

// The largest rank key K such that the members with key >= K carry at least `target` (weights, or one each
// when `by_count`). The members' total must reach target >= 1.
__device__ uint64_t select_key(RowGroup& group, const Slice& slice, Shared& s, const Members& m,
                               bool by_count, uint64_t target) {
  const uint64_t* weights = slice.a->weights + slice.row * slice.a->width;
  // A weightless member never moves a weight select (its target is >= 1), so only counts see it.
  const auto counted = [&](float logit, uint64_t key, uint64_t weight) {
    return member(logit, key, weight, m) && (by_count || weight > 0);
  };
  const bool needs_weights = !by_count || m.min_weight > 0;
  uint64_t prefix = 0, above = 0;
  int high = 64;  // bits of `prefix` fixed so far, from the top
  for (int digit = 0; digit < kDigitCount; ++digit) {
    const int bits = digit_bits(digit);
    const int shift = high - bits;
    const unsigned buckets = 1u << bits;
    for (unsigned d = threadIdx.x; d < buckets; d += kThreads)
      s.sum_low[d] = 0, s.sum_high[d] = 0, s.counts[d] = 0;
    __syncthreads();
    for (int64_t base = slice.first; base < slice.a->width; base += kBatch * slice.stride) {
      float logits[kBatch];
      load_batch(slice, base, logits);
      uint64_t batch_weights[kBatch];  // keys are recomputed below: registers are the limit here
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t i = base + u * slice.stride;
        const uint64_t key = keyed::rank_key(logits[u], static_cast<uint32_t>(i));
        const bool under_prefix = high == 64 || (key >> high) == (prefix >> high);
        if (!under_prefix) logits[u] = NAN;  // not a member from here on
        batch_weights[u] = under_prefix && needs_weights && isfinite(logits[u]) ? weights[i] : 0;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const uint64_t key = keyed::rank_key(logits[u], static_cast<uint32_t>(base + u * slice.stride));
        if (counted(logits[u], key, batch_weights[u]))
          add_to_bucket(s, static_cast<unsigned>(key >> shift) & (buckets - 1u),
                        by_count ? 1u : batch_weights[u]);
      }
    }
    __syncthreads();
    group.sync();
    choose_digit(group, s, buckets, above, target);
    prefix |= static_cast<uint64_t>(s.chosen_digit) << shift;
    above = s.chosen_above;
    high = shift;
    const bool alone = s.chosen_count == 1;
    group.sync();  // every block has read every histogram before any clears its own
    if (alone || high == 0) break;
  }
  if (high == 0) return prefix;
  // One member left under the prefix: the block holding it publishes its whole key.
  if (threadIdx.x == 0) s.found = 0;
  __syncthreads();
  for (int64_t i = slice.first; i < slice.a->width; i += slice.stride) {
    const float logit = slice.logit(i);
    const uint64_t key = keyed::rank_key(logit, static_cast<uint32_t>(i));
    if ((key >> high) == (prefix >> high) && counted(logit, key, weights[i])) s.found_key = key, s.found = 1;
  }
  group.sync();
  uint64_t key = 0;
  for (unsigned rank = 0; rank < RowGroup::kBlocks; ++rank) {
    const Shared* remote = group.map_shared_rank(&s, rank);
    if (remote->found) key = remote->found_key;
  }
  group.sync();
  return key;
}

// Greedy id (largest non-NaN logit, lowest id), largest finite logit and the finite count of the row.
struct RowSummary {
  int best_id = -1;
  float best = 0.0f;
  float top = -INFINITY;
  unsigned finite = 0;

  __device__ void take(float value, int id, float other_top, unsigned other_finite) {
    if (id >= 0 && (best_id < 0 || value > best || (value == best && id < best_id)))
      best = value, best_id = id;
    top = fmaxf(top, other_top);
    finite += other_finite;
  }
};

__device__ RowSummary summarize(RowGroup& group, const Slice& slice, Shared& s) {
  RowSummary mine;
  for (int64_t i = slice.first; i < slice.a->width; i += slice.stride) {
    const float logit = slice.logit(i);
    if (!isnan(logit)) mine.take(logit, static_cast<int>(i), -INFINITY, 0);
    if (isfinite(logit)) mine.take(0.0f, -1, logit, 1);
  }
  for (int offset = 16; offset >= 1; offset /= 2)
    mine.take(
        __shfl_down_sync(0xffffffffu, mine.best, offset), __shfl_down_sync(0xffffffffu, mine.best_id, offset),
        __shfl_down_sync(0xffffffffu, mine.top, offset), __shfl_down_sync(0xffffffffu, mine.finite, offset));
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    s.warp_best[warp] = mine.best;
    s.warp_best_id[warp] = mine.best_id;
    s.warp_top[warp] = mine.top;
    s.warp_finite[warp] = mine.finite;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    RowSummary block;
    for (int w = 0; w < kWarps; ++w)
      block.take(s.warp_best[w], s.warp_best_id[w], s.warp_top[w], s.warp_finite[w]);
    s.best_value = block.best, s.best_id = block.best_id, s.top = block.top, s.finite = block.finite;
  }
  group.sync();
  RowSummary row;
  for (unsigned rank = 0; rank < RowGroup::kBlocks; ++rank) {
    const Shared* remote = group.map_shared_rank(&s, rank);
    row.take(remote->best_value, remote->best_id, remote->top, remote->finite);
  }
  group.sync();  // read before any block may leave (a greedy row ends here)
  return row;
}

// The weight of the members of this block's share, summed over the group.
__device__ uint64_t kept_weight(RowGroup& group, const Slice& slice, Shared& s, const Members& m) {
  const uint64_t* weights = slice.a->weights + slice.row * slice.a->width;
  unsigned long long kept = 0;
  for (int64_t base = slice.first; base < slice.a->width; base += kBatch * slice.stride) {
    float logits[kBatch];
    load_batch(slice, base, logits);
    uint64_t batch_weights[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      batch_weights[u] = isfinite(logits[u]) ? weights[base + u * slice.stride] : 0;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const uint64_t key = keyed::rank_key(logits[u], static_cast<uint32_t>(base + u * slice.stride));
      if (member(logits[u], key, batch_weights[u], m)) kept += batch_weights[u];
    }
  }
  return cluster_sum(group, s, kept);
}

__device__ __forceinline__ Slice group_slice(const SampleArgs& a, const RowGroup& group) {
  return {&a, blockIdx.x / RowGroup::kBlocks,
          static_cast<int64_t>(group.block_rank()) * kThreads + threadIdx.x,
          int64_t{RowGroup::kBlocks} * kThreads};
}

__device__ __forceinline__ bool draws_greedily(const ops::SampleParams& p, const SampleRowSummary& summary) {
  return keyed::greedy(p) || summary.finite == 0;
}

// Kernel 1: each row's summary; a greedy row's id is its draw.
__global__ void PLUMB_ROW_CLUSTER __launch_bounds__(kThreads) summary_kernel(SampleArgs a) {
  wait_for_previous_kernel();
  __shared__ Shared s;
  RowGroup group;
  const Slice slice = group_slice(a, group);
  const RowSummary row = summarize(group, slice, s);
  if (group.block_rank() != 0 || threadIdx.x != 0) return;
  const SampleRowSummary summary{row.best_id, row.top, row.finite, 0};
  a.summaries[slice.row] = summary;
  if (draws_greedily(a.params[slice.row], summary)) a.out[slice.row] = row.best_id;
}

// Kernel 2: the weights of the rows that draw, over the whole grid (a double exp per finite logit).
constexpr int kWeightThreads = 256;

__global__ void __launch_bounds__(kWeightThreads) weight_kernel(SampleArgs a) {
  wait_for_previous_kernel();
  const int64_t row = blockIdx.y;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kWeightThreads + threadIdx.x;
  const ops::SampleParams p = a.params[row];
  const SampleRowSummary summary = a.summaries[row];
  if (i >= a.width || draws_greedily(p, summary)) return;
  const int64_t at = row * a.x_stride + i;
  const float logit =
      a.x_f32 ? static_cast<const float*>(a.x)[at] : bf16_value(static_cast<const uint16_t*>(a.x)[at]);
  a.weights[row * a.width + i] =
      isfinite(logit) ? keyed::weight(keyed::gap(logit, summary.top, p.temperature)) : 0;
}

// Kernel 3: top-k, top-p, min-p and the draw, for the rows that draw.
__global__ void PLUMB_ROW_CLUSTER __launch_bounds__(kThreads, 2) select_kernel(SampleArgs a) {
  wait_for_previous_kernel();
  __shared__ Shared s;
  RowGroup group;
  const Slice slice = group_slice(a, group);
  const ops::SampleParams p = a.params[slice.row];
  const SampleRowSummary summary = a.summaries[slice.row];
  if (draws_greedily(p, summary)) return;  // the whole cluster leaves together
  Members m;
  if (p.top_k > 0 && static_cast<unsigned>(p.top_k) < summary.finite)
    m.lower = select_key(group, slice, s, m, true, static_cast<uint64_t>(p.top_k));
  if (p.top_p < 1.0f) {
    const uint64_t total = kept_weight(group, slice, s, m);
    m.lower = select_key(group, slice, s, m, false, keyed::ceil_fraction(total, p.top_p));
  }
  if (p.min_p > 0.0f) m.min_weight = keyed::ceil_fraction(uint64_t{1} << keyed::kWeightBits, p.min_p);
  const uint64_t total = kept_weight(group, slice, s, m);
  const uint64_t key =
      select_key(group, slice, s, m, false, keyed::draw_target(total, p.seed, p.position) + 1);
  if (group.block_rank() == 0 && threadIdx.x == 0)
    a.out[slice.row] = static_cast<int32_t>(keyed::key_id(key));
}

}  // namespace

size_t sample_scratch_bytes(const SampleArgs& launch) {
  return static_cast<size_t>(launch.rows * launch.width) * sizeof(uint64_t) +
         static_cast<size_t>(launch.rows) * sizeof(SampleRowSummary);
}

cudaError_t launch_sample(const SampleArgs& launch, bool clusters, cudaStream_t stream) {
  if (launch.rows == 0) return cudaSuccess;
  const auto groups = static_cast<unsigned>(launch.rows * (clusters ? kSampleClusterBlocks : 1));
  summary_kernel<<<groups, kThreads, 0, stream>>>(launch);
  if (const cudaError_t code = cudaGetLastError(); code != cudaSuccess) return code;
  const dim3 grid(blocks_for(launch.width, kWeightThreads), static_cast<unsigned>(launch.rows));
  weight_kernel<<<grid, kWeightThreads, 0, stream>>>(launch);
  if (const cudaError_t code = cudaGetLastError(); code != cudaSuccess) return code;
  select_kernel<<<groups, kThreads, 0, stream>>>(launch);
  return cudaGetLastError();
}

}  // namespace plumb::cuda

// The keyed draw of ops/keyed_draw.hpp, one block per logits row. Reproduces the host's sort with radix
// selects over the 64-bit rank keys: each select finds the largest key whose members at or above it reach
// an integer target (a count for top-k, a weight for top-p and the draw). Every sum is an integer, so the
// order of the shared-memory atomics never changes a bit. No float rounding beyond keyed_draw.hpp's steps.
#include "cuda/bf16.cuh"
#include "cuda/launchers.hpp"
#include "ops/keyed_draw.hpp"

namespace plumb::cuda {

namespace {

namespace keyed = ops::keyed;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBuckets = 1 << 11;
// The rank key's digits from the top, 11 + 11 + 10 bits of logit, then the same of id.
constexpr int kDigitCount = 6;
__device__ __forceinline__ int digit_bits(int digit) { return digit % 3 == 2 ? 10 : 11; }

// A bucket's weight is 64 bits kept as two 32-bit words: shared memory adds 32-bit integers natively, and
// a 64-bit add would be a compare-and-swap loop that contends on the few crowded top buckets.
struct Shared {
  unsigned sum_low[kBuckets];
  unsigned sum_high[kBuckets];
  unsigned counts[kBuckets];
  unsigned long long warp_totals[kWarps];
  unsigned long long total;
  unsigned long long key;  // a select's answer
  unsigned long long chosen_above;
  unsigned chosen_digit;
  unsigned chosen_count;
  float best_value[kWarps];
  int best_id[kWarps];
  float top[kWarps];
  unsigned finite[kWarps];
};

__device__ __forceinline__ float logit_at(const SampleArgs& a, int64_t row, int64_t i) {
  const int64_t at = row * a.x_stride + i;
  return a.x_f32 ? static_cast<const float*>(a.x)[at] : bf16_value(static_cast<const uint16_t*>(a.x)[at]);
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

__device__ unsigned long long block_sum(Shared& s, unsigned long long value) {
  for (int offset = 16; offset >= 1; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  __syncthreads();
  if (threadIdx.x == 0) s.total = 0;
  __syncthreads();
  if (threadIdx.x % 32 == 0) atomicAdd(&s.total, value);
  __syncthreads();
  return s.total;
}

// Exclusive prefix of `value` over threads 0, 1, ... (integers: exact in any order).
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

// The largest rank key K such that the members with key >= K carry at least `target` (weights, or one each
// when `by_count`). The members' total must reach target >= 1.
__device__ uint64_t select_key(const SampleArgs& a, int64_t row, Shared& s, const Members& m, bool by_count,
                               uint64_t target) {
  const uint64_t* weights = a.weights + row * a.width;
  // A weightless member never moves a weight select (its target is >= 1), so only counts see it.
  const auto counted = [&](float logit, uint64_t key, uint64_t weight) {
    return member(logit, key, weight, m) && (by_count || weight > 0);
  };
  uint64_t prefix = 0, above = 0;
  int high = 64;  // bits of `prefix` fixed so far, from the top
  for (int digit = 0; digit < kDigitCount; ++digit) {
    const int bits = digit_bits(digit);
    const int shift = high - bits;
    const unsigned buckets = 1u << bits;
    for (unsigned d = threadIdx.x; d < buckets; d += kThreads) s.sum_low[d] = 0, s.sum_high[d] = 0, s.counts[d] = 0;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < a.width; i += kThreads) {
      const float logit = logit_at(a, row, i);
      const uint64_t key = keyed::rank_key(logit, static_cast<uint32_t>(i));
      if (high < 64 && (key >> high) != (prefix >> high)) continue;
      const uint64_t weight = weights[i];
      if (!counted(logit, key, weight)) continue;
      add_to_bucket(s, static_cast<unsigned>(key >> shift) & (buckets - 1u), by_count ? 1u : weight);
    }
    __syncthreads();
    // Thread t owns the buckets [buckets - (t + 1) * per, buckets - t * per): the highest digits first.
    const unsigned per = buckets > kThreads ? buckets / kThreads : 1u;
    const unsigned top = buckets - threadIdx.x * per;  // one past this thread's highest digit
    unsigned long long own = 0;
    if (threadIdx.x * per < buckets)
      for (unsigned d = top - per; d < top; ++d) own += bucket_sum(s, d);
    const unsigned long long before = above + block_exclusive_scan(s, own);
    if (own > 0 && before < target && before + own >= target) {
      unsigned long long running = before;
      for (unsigned d = top; d-- > top - per;) {
        if (running + bucket_sum(s, d) >= target) {
          s.chosen_digit = d;
          s.chosen_above = running;
          s.chosen_count = s.counts[d];
          break;
        }
        running += bucket_sum(s, d);
      }
    }
    __syncthreads();
    prefix |= static_cast<uint64_t>(s.chosen_digit) << shift;
    above = s.chosen_above;
    high = shift;
    if (s.chosen_count == 1 || high == 0) break;
  }
  if (high == 0) return prefix;
  // One member left under the prefix: find its whole key.
  for (int64_t i = threadIdx.x; i < a.width; i += kThreads) {
    const float logit = logit_at(a, row, i);
    const uint64_t key = keyed::rank_key(logit, static_cast<uint32_t>(i));
    if ((key >> high) == (prefix >> high) && counted(logit, key, weights[i])) s.key = key;
  }
  __syncthreads();
  return s.key;
}

// Greedy id (largest non-NaN logit, lowest id), largest finite logit and the finite count of the row.
struct RowSummary {
  int best_id;
  float top;
  unsigned finite;
};

__device__ RowSummary summarize(const SampleArgs& a, int64_t row, Shared& s) {
  float best = 0.0f, top = -INFINITY;
  int best_id = -1;
  unsigned finite = 0;
  for (int64_t i = threadIdx.x; i < a.width; i += kThreads) {
    const float logit = logit_at(a, row, i);
    if (!isnan(logit) && (best_id < 0 || logit > best)) best = logit, best_id = static_cast<int>(i);
    if (isfinite(logit)) top = fmaxf(top, logit), ++finite;
  }
  if (best_id < 0) best = NAN;
  for (int offset = 16; offset >= 1; offset /= 2) {
    const float other = __shfl_down_sync(0xffffffffu, best, offset);
    const int other_id = __shfl_down_sync(0xffffffffu, best_id, offset);
    if (other_id >= 0 && (best_id < 0 || other > best || (other == best && other_id < best_id)))
      best = other, best_id = other_id;
    top = fmaxf(top, __shfl_down_sync(0xffffffffu, top, offset));
    finite += __shfl_down_sync(0xffffffffu, finite, offset);
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    s.best_value[warp] = best;
    s.best_id[warp] = best_id;
    s.top[warp] = top;
    s.finite[warp] = finite;
  }
  __syncthreads();
  RowSummary summary{-1, -INFINITY, 0};
  float summary_best = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    const int id = s.best_id[w];
    if (id >= 0 && (summary.best_id < 0 || s.best_value[w] > summary_best ||
                    (s.best_value[w] == summary_best && id < summary.best_id)))
      summary_best = s.best_value[w], summary.best_id = id;
    summary.top = fmaxf(summary.top, s.top[w]);
    summary.finite += s.finite[w];
  }
  __syncthreads();
  return summary;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(SampleArgs a) {
  __shared__ Shared s;
  const int64_t row = blockIdx.x;
  const ops::SampleParams p = a.params[row];
  const RowSummary summary = summarize(a, row, s);
  if (keyed::greedy(p) || summary.finite == 0) {
    if (threadIdx.x == 0) a.out[row] = summary.best_id;
    return;
  }
  // Weights once, then the selects read them.
  uint64_t* weights = a.weights + row * a.width;
  for (int64_t i = threadIdx.x; i < a.width; i += kThreads) {
    const float logit = logit_at(a, row, i);
    weights[i] = isfinite(logit) ? keyed::weight(keyed::gap(logit, summary.top, p.temperature)) : 0;
  }
  __syncthreads();
  Members m;
  if (p.top_k > 0 && static_cast<unsigned>(p.top_k) < summary.finite)
    m.lower = select_key(a, row, s, m, true, static_cast<uint64_t>(p.top_k));
  if (p.top_p < 1.0f) {
    unsigned long long kept = 0;
    for (int64_t i = threadIdx.x; i < a.width; i += kThreads) {
      const float logit = logit_at(a, row, i);
      if (member(logit, keyed::rank_key(logit, static_cast<uint32_t>(i)), weights[i], m)) kept += weights[i];
    }
    const uint64_t total = block_sum(s, kept);
    m.lower = select_key(a, row, s, m, false, keyed::ceil_fraction(total, p.top_p));
  }
  if (p.min_p > 0.0f) m.min_weight = keyed::ceil_fraction(uint64_t{1} << keyed::kWeightBits, p.min_p);
  unsigned long long kept = 0;
  for (int64_t i = threadIdx.x; i < a.width; i += kThreads) {
    const float logit = logit_at(a, row, i);
    if (member(logit, keyed::rank_key(logit, static_cast<uint32_t>(i)), weights[i], m)) kept += weights[i];
  }
  const uint64_t total = block_sum(s, kept);
  const uint64_t target = keyed::draw_target(total, p.seed, p.position) + 1;
  const uint64_t key = select_key(a, row, s, m, false, target);
  if (threadIdx.x == 0) a.out[row] = static_cast<int32_t>(keyed::key_id(key));
}

}  // namespace

size_t sample_scratch_bytes(const SampleArgs& launch) {
  return static_cast<size_t>(launch.rows * launch.width) * sizeof(uint64_t);
}

cudaError_t launch_sample(const SampleArgs& launch, cudaStream_t stream) {
  if (launch.rows == 0) return cudaSuccess;
  sample_kernel<<<static_cast<unsigned>(launch.rows), kThreads, 0, stream>>>(launch);
  return cudaGetLastError();
}

}  // namespace plumb::cuda

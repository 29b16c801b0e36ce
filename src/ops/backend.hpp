#pragma once
// A backend owns device memory and implements each op's typed launcher. The op entries in ops.hpp validate
// their operands and build the launch structs below, so a launcher may trust every pointer, dim and stride.
// Pointers are device pointers; strides are in elements; bf16 and f16 are raw uint16_t bits.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "ops/keyed_draw.hpp"

namespace plumb::ops {

// A tensor allocated by a backend; the storage lives as long as any copy of it.
struct DeviceTensor {
  TensorView view;
  std::shared_ptr<void> storage;
};

// Dense weight [out, in] or MLX affine [out, in] as raw device pointers.
struct WeightLaunch {
  bool affine = false;
  DType dense_dtype = DType::bf16;   // dense: bf16, f16 or f32
  const void* dense = nullptr;       // [out, in], row stride `in`
  const uint32_t* packed = nullptr;  // affine: [out, in * bits / 32]
  const uint16_t* scales = nullptr;  // affine: bf16 [out, in / group]
  const uint16_t* biases = nullptr;  // affine: bf16 [out, in / group]
  int bits = 0;
  int group = 0;
  int64_t out = 0;
  int64_t in = 0;
  // affine: the backend's own copy for few rows (Backend::prepare_weight), or none
  const void* decode_layout = nullptr;
};

struct EmbedLaunch {
  const int32_t* ids;
  WeightLaunch table;
  float scale;  // already bf16-representable
  uint16_t* out;
  int64_t out_stride;
  int64_t rows;
};

struct RmsNormLaunch {
  const uint16_t* x;
  int64_t x_stride;        // between rows; a row is `heads` contiguous vectors of `dim`
  const uint16_t* weight;  // nullptr: weightless
  uint16_t* out;
  int64_t out_stride;
  int64_t rows;
  int64_t heads;  // 1 for [rows, dim]
  int64_t dim;
  float eps;
};

struct NormRopeLaunch {
  RmsNormLaunch norm;
  const int32_t* positions;
  const float* inv_freq;  // host array [dim / 2], from rope_inv_freq; a backend copies what it needs
};

// Rows [first_row, first_row + rows) of a kv_write go to this cache; no two segments' caches share a byte.
struct KvWriteSegmentLaunch {
  int64_t first_row;
  int64_t rows;
  uint16_t* cache_keys;    // [capacity, kv_heads, head_dim]
  uint16_t* cache_values;  // [capacity, kv_heads, head_dim]
  int64_t capacity;
};

struct KvWriteLaunch {
  const KvWriteSegmentLaunch* segments;  // host array covering rows [0, rows) in order
  int64_t segment_count;
  const int32_t* positions;
  const uint16_t* keys;  // [rows, kv_heads, head_dim]
  int64_t keys_stride;
  const uint16_t* values;
  int64_t values_stride;
  int64_t rows;
  int64_t kv_heads;
  int64_t head_dim;
};

struct AttentionSegmentLaunch {
  int64_t first_row;
  int64_t rows;
  const uint16_t* keys;    // [capacity, kv_heads, head_dim]
  const uint16_t* values;  // [capacity, kv_heads, head_dim]
  int64_t capacity;
  int64_t end;  // one past the last written position
};

struct AttentionLaunch {
  const uint16_t* q;  // [rows, heads, head_dim]
  int64_t q_stride;
  const int32_t* positions;
  const AttentionSegmentLaunch* segments;  // host array
  int64_t segment_count;
  uint16_t* out;
  int64_t out_stride;
  int64_t rows;
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  int64_t window;  // 0: global
  float scale;
};

struct MatmulLaunch {
  const uint16_t* x;  // bf16 [rows, in]
  int64_t x_stride;
  WeightLaunch weight;
  void* out;  // bf16 or f32 [rows, out]
  DType out_dtype;
  int64_t out_stride;
  int64_t rows;
};

inline constexpr size_t kMatmulGroupMembers = 3;

// 1 to kMatmulGroupMembers matmuls of one x (the same x, x_stride and rows in each).
struct MatmulGroupLaunch {
  std::span<const MatmulLaunch> members;
};

struct RowsLaunch {
  const uint16_t* a;
  int64_t a_stride;
  const uint16_t* b;  // second input (geglu up, add b); nullptr for one-input ops
  int64_t b_stride;
  void* out;
  DType out_dtype;  // bf16, or f32 where the op allows it
  int64_t out_stride;
  int64_t rows;
  int64_t width;
  float factor;  // scale: bf16 factor; soft_cap: cap
};

// gate = x · Gᵀ and up = x · Uᵀ (one x, each the bits ops::matmul gives), then out = geglu(gate, up) (the
// bits ops::geglu gives); out is disjoint from gate and up, or is one of them (which then holds out).
struct MatmulGegluLaunch {
  MatmulLaunch gate, up;
  RowsLaunch geglu;
};

// Gemma 4's per-head norms before attention, in this order: v = rms_norm(v source) (weightless; the source
// may be k's raw rows, then read before k changes), q = norm_rope(q), k = norm_rope(k). The three share rows,
// head_dim, positions and eps.
// With `cache`, the k and v rows written are then also written to their caches as that kv_write would (its
// keys and values are k.norm.out and v.out).
struct HeadNormsLaunch {
  RmsNormLaunch v;
  NormRopeLaunch q;
  NormRopeLaunch k;
  const KvWriteLaunch* cache = nullptr;
};

// matmul_group, then head_norms (which may read and write the group's outputs).
struct MatmulHeadNormsLaunch {
  MatmulGroupLaunch group;
  HeadNormsLaunch norms;
};

// Gemma 4's sandwich residual: h_out = bf16(h + post_norm(o)), then bf16(h_out * factor) when scaled, then
// next = next_norm(h_out). post.x is o and post.out is `next` (its scratch until the last step); next_norm.x
// is h_out.
struct ResidualNormLaunch {
  RmsNormLaunch post;
  const uint16_t* h;
  int64_t h_stride;
  uint16_t* h_out;  // may be h
  int64_t h_out_stride;
  bool scaled;
  float factor;  // already bf16-representable
  RmsNormLaunch next_norm;
};

struct ArgmaxLaunch {
  const void* x;
  DType x_dtype;  // bf16 or f32
  int64_t x_stride;
  int32_t* out;
  int64_t rows;
  int64_t width;
};

struct SampleLaunch {
  const void* x;
  DType x_dtype;  // bf16 or f32
  int64_t x_stride;
  const SampleParams* params;  // [rows]
  int32_t* out;
  int64_t rows;
  int64_t width;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual Device device() const = 0;

  // Memory: contiguous tensors on this backend's device; host views are contiguous host memory.
  virtual Result<DeviceTensor> allocate(DType dtype, Shape shape) = 0;
  virtual Status upload(const TensorView& host, const TensorView& device_tensor) = 0;
  virtual Status download(const TensorView& device_tensor, const TensorView& host) = 0;
  // Copies between two tensors of this device with equal dtype and shape (cache growth).
  virtual Status copy(const TensorView& from, const TensorView& to) = 0;
  // Waits until every launched op has finished.
  virtual Status synchronize() = 0;
  // Bytes this backend could still allocate (the device's free memory plus what its allocator holds unused),
  // or -1 where it does not say (host memory).
  virtual int64_t free_memory_bytes() const { return -1; }
  // A second copy of an affine weight in a layout of the backend's own, made once after the weight's tensors
  // are uploaded, that its few-row matmuls read instead (CUDA: lanes' codes, scales and tile forms contiguous
  // for the decode kernel); none (nullopt) where the backend keeps no such copy. The copy holds the same
  // codes, scales and biases, so no bit may depend on whether a weight has one. It waits for the device, as
  // an upload may: never between begin_graph and end_graph.
  virtual Result<std::optional<DeviceTensor>> prepare_weight(const WeightLaunch& /*weight*/) {
    return std::optional<DeviceTensor>{};
  }

  // Graphs (E4 graph == eager): the ops launched between begin_graph and end_graph(true) are recorded and run
  // as one graph, kept under the key (replacing what the key held). begin_graph returns false (and the ops
  // run as they come) where the backend has no graphs or they are off; end_graph(false) drops a recording
  // after a failed op. Nothing between the two may wait on the device (no upload, download or synchronize).
  virtual bool begin_graph(int64_t /*key*/) { return false; }
  virtual Status end_graph(bool /*launch*/) { return {}; }
  // Runs the graph kept under `key` again, unchanged, and returns true; false (nothing run) where there is
  // none or it can no longer run as recorded (the backend's own scratch moved since). The caller vouches that
  // every argument the recorded ops were given (tensor addresses, row counts, segment tables) is the same
  // now; the values in those tensors may differ.
  virtual bool replay_graph(int64_t /*key*/) { return false; }
  // Whether graphs are on (begin_graph may record).
  virtual bool graphs_enabled() const { return false; }
  // Turns graphs on or off; returns whether the backend has them.
  virtual bool set_graphs(bool /*on*/) { return false; }
  // Graphs launched so far (recordings run as graphs and replays, not ops run as they came), and of those
  // the replays.
  virtual int64_t graph_launches() const { return 0; }
  virtual int64_t graph_replays() const { return 0; }

  // Typed launchers, called by the op entries after validation.
  virtual void embed_rows(const EmbedLaunch& launch) = 0;
  virtual void rms_norm(const RmsNormLaunch& launch) = 0;
  virtual void norm_rope(const NormRopeLaunch& launch) = 0;
  virtual void kv_write(const KvWriteLaunch& launch) = 0;
  virtual void attention(const AttentionLaunch& launch) = 0;
  virtual void matmul(const MatmulLaunch& launch) = 0;
  // Matmuls of one x (up to kMatmulGroupMembers), one launch where a backend groups them (CUDA); by default
  // each its own matmul, which is what the group must equal bit for bit.
  virtual void matmul_group(const MatmulGroupLaunch& launch);
  virtual void geglu(const RowsLaunch& launch) = 0;
  // The gate and up matmuls, then geglu of their outputs: one launch where a backend fuses the geglu into the
  // matmuls' K-split reduce (CUDA); by default the group, then geglu, which is what it must equal bit for
  // bit.
  virtual void matmul_geglu(const MatmulGegluLaunch& launch);
  virtual void add(const RowsLaunch& launch) = 0;
  virtual void scale(const RowsLaunch& launch) = 0;
  virtual void soft_cap(const RowsLaunch& launch) = 0;
  // One launch where a backend fuses the steps (CUDA); by default the steps as their own launches, which is
  // what the fused kernel must equal bit for bit.
  virtual void residual_norm(const ResidualNormLaunch& launch);
  // One launch where a backend fuses them (CUDA); by default the three ops' own launches.
  virtual void head_norms(const HeadNormsLaunch& launch);
  // The group, then head_norms: one launch after the matmuls where a backend adds the norms to their K-split
  // reduce (CUDA); by default the two ops, which is what it must equal bit for bit.
  virtual void matmul_head_norms(const MatmulHeadNormsLaunch& launch);
  virtual void argmax(const ArgmaxLaunch& launch) = 0;
  virtual void sample(const SampleLaunch& launch) = 0;
};

// Records the ops launched in its lifetime as one graph under `key` (0: none) where the backend has graphs
// (else they run as they come); the graph runs at finish(), and an unfinished recording (a failed op) is
// dropped.
class GraphScope {
 public:
  GraphScope(Backend& backend, int64_t key)
      : backend_(backend), recording_(key > 0 && backend.begin_graph(key)) {}
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;
  ~GraphScope() {
    if (recording_) (void)backend_.end_graph(false);
  }
  Status finish() {
    if (!recording_) return {};
    recording_ = false;
    return backend_.end_graph(true);
  }

 private:
  Backend& backend_;
  bool recording_;
};

}  // namespace plumb::ops

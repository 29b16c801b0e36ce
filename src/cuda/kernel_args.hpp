#pragma once
// The kernels' view of each launch: plain structs with raw device pointers, dims and strides in elements,
// built by the backend from the validated ops launch structs (ops/backend.hpp). They carry no library
// headers, so every .cu file compiles without the host-only parts of core/.
#include <cstdint>

#include "ops/keyed_draw.hpp"

namespace plumb::cuda {

enum class DenseKind : uint8_t { bf16, f16, f32 };

struct WeightArgs {
  bool affine;
  DenseKind dense_kind;
  const void* dense;  // [out, in], row stride `in`
  const uint32_t* packed;
  const uint16_t* scales;
  const uint16_t* biases;
  int bits;
  int group;
  int64_t out;
  int64_t in;
  const void* decode_layout;  // the decode kernel's copy (launch_decode_layout), or nullptr
};

struct EmbedArgs {
  const int32_t* ids;
  WeightArgs table;
  float scale;
  uint16_t* out;
  int64_t out_stride;
  int64_t rows;
};

struct RmsNormArgs {
  const uint16_t* x;
  int64_t x_stride;
  const uint16_t* weight;
  uint16_t* out;
  int64_t out_stride;
  int64_t rows;
  int64_t heads;
  int64_t dim;
  float eps;
};

struct ResidualNormArgs {
  RmsNormArgs post;  // o into next's rows (scratch there where the steps are separate launches)
  const uint16_t* h;
  int64_t h_stride;
  uint16_t* h_out;
  int64_t h_out_stride;
  bool scaled;
  float factor;
  RmsNormArgs next_norm;
};

struct NormRopeArgs {
  RmsNormArgs norm;
  const int32_t* positions;
  const float* inv_freq;  // host [dim / 2]
};

struct HeadNormsArgs {
  RmsNormArgs v;  // weightless; x may be k's raw rows
  NormRopeArgs q, k;
};

struct KvWriteSegmentArgs {
  int64_t first_row;
  int64_t rows;
  uint16_t* cache_keys;
  uint16_t* cache_values;
  int64_t capacity;
};

struct KvWriteArgs {
  const KvWriteSegmentArgs* segments;  // host array
  int64_t segment_count;
  const int32_t* positions;
  const uint16_t* keys;
  int64_t keys_stride;
  const uint16_t* values;
  int64_t values_stride;
  int64_t rows;
  int64_t kv_heads;
  int64_t head_dim;
};

struct AttentionSegmentArgs {
  int64_t first_row;
  int64_t rows;
  const uint16_t* keys;
  const uint16_t* values;
  int64_t capacity;
  int64_t end;
};

struct AttentionArgs {
  const uint16_t* q;
  int64_t q_stride;
  const int32_t* positions;
  const AttentionSegmentArgs* segments;  // host array
  int64_t segment_count;
  uint16_t* out;
  int64_t out_stride;
  int64_t rows;
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  int64_t window;
  float scale;
};

struct MatmulArgs {
  const uint16_t* x;
  int64_t x_stride;
  WeightArgs weight;
  void* out;
  bool out_f32;
  int64_t out_stride;
  int64_t rows;
};

struct RowsArgs {
  const uint16_t* a;
  int64_t a_stride;
  const uint16_t* b;
  int64_t b_stride;
  void* out;
  bool out_f32;
  int64_t out_stride;
  int64_t rows;
  int64_t width;
  float factor;
};

struct ArgmaxArgs {
  const void* x;
  bool x_f32;
  int64_t x_stride;
  int32_t* out;
  int64_t rows;
  int64_t width;
};

// What the draw's first kernel learns of a row: the greedy id, the largest finite logit and how many are
// finite.
struct SampleRowSummary {
  int32_t best_id;
  float top;
  uint32_t finite;
  uint32_t unused;
};

struct SampleArgs {
  const void* x;
  bool x_f32;
  int64_t x_stride;
  const ops::SampleParams* params;  // [rows]
  uint64_t* weights;                // scratch [rows, width]
  SampleRowSummary* summaries;      // scratch [rows]
  int32_t* out;
  int64_t rows;
  int64_t width;
};

}  // namespace plumb::cuda

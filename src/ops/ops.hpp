#pragma once
// The op set a family's forward is written against (DESIGN.md §1, §2). Each op entry checks dtypes, shapes
// and strides, names the offending tensor in the Status it returns, then calls the backend's typed launcher.
// Activations are bf16 between ops; inside an op the arithmetic is fp32 with fp32 accumulation. Each op's
// comment names the expression it reproduces and where it rounds (HF transformers' points; docs/numerics.md).
//
// Conventions for every op:
// - Tensors live on the backend's device (Backend::allocate / upload); `where` in errors is "ops.<op>".
// - "Row tensors" are [rows, cols] (or [rows, heads, dim]): the last dims are contiguous, the row stride
//   (strides[0]) may be larger than the row, so a column slice of a wider tensor is a valid operand.
// - ids and positions are i32 [rows]; positions are absolute token positions in the stream.
// - Outputs must not overlap inputs, except that the row-wise ops (rms_norm, norm_rope, geglu, add, scale,
//   soft_cap to bf16) accept out equal to an input (same data, shape and strides): they run in place.
// - Every op keeps I1-I4: a row's bits depend only on that row's inputs (and for attention, on the keys
// visible
//   to it by absolute position), never on the row count, the row's index or the other rows.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "ops/attention_bucket.hpp"

namespace plumb::ops {

class Backend;
struct DeviceTensor;

// A matmul or embedding weight [out, in]: dense (bf16, f16 or f32) or MLX affine (packed u32 bit stream,
// LSB first, `bits` per element, bf16 scales and biases per group of `group` inputs).
struct Weight {
  enum class Format : uint8_t { dense, affine };
  std::string name;  // the checkpoint name, used in errors
  Format format = Format::dense;
  int64_t out = 0;
  int64_t in = 0;
  TensorView dense;          // dense: [out, in], contiguous
  TensorView packed;         // affine: u32 [out, in * bits / 32], contiguous
  TensorView scales;         // affine: bf16 [out, in / group]
  TensorView biases;         // affine: bf16 [out, in / group]
  int bits = 0;              // affine: 2, 3, 4, 5, 6 or 8
  int group = 0;             // affine: 32, 64 or 128
  TensorView decode_layout;  // affine: the backend's second copy for few rows (prepare_weight), or empty

  static Weight make_dense(std::string name, TensorView dense);
  static Weight make_affine(std::string name, int64_t in, TensorView packed, TensorView scales,
                            TensorView biases, int bits, int group);
};

// Checks a weight's own consistency (packed width from bits, group count, dtypes); names it on failure.
Status check_weight(std::string_view where, const Weight& weight);
// Checks that every tensor of the weight lives on `device` (the backend's): a weight on another device would
// pass check_weight and then be read through a pointer the backend cannot use.
Status check_weight_device(std::string_view where, const Weight& weight, Device device);
// Asks the backend for its copy of an affine weight (Backend::prepare_weight) and points the weight at it;
// the returned storage (none where the backend keeps no copy) must outlive every launch with the weight.
Result<std::optional<DeviceTensor>> prepare_weight(Backend& backend, Weight& weight);

// RoPE in the rotate_half layout: dimension i pairs with i + head_dim/2.
// default:      inv_freq[i] = theta^(-2i/head_dim) for every i < head_dim/2.
// proportional: the first int(partial_rotary_factor * head_dim / 2) pairs as above (exponent still over the
//               full head_dim), the rest have inv_freq 0 and pass through unchanged.
// Both divide inv_freq by `factor` (HF's linear scaling; 1 for Gemma 4).
struct RopeSpec {
  double theta = 10000.0;
  int64_t head_dim = 0;
  double partial_rotary_factor = 1.0;  // 1.0 is the default rope
  double factor = 1.0;
};
// inv_freq[head_dim/2] as HF computes it in f32: 1 / theta^(2i/head_dim), then / factor; zeros past the
// rotated pairs. Computed on the host, so every backend uses the same bits.
std::vector<float> rope_inv_freq(const RopeSpec& spec);

// One layer's cache for one stream: key and value rows stored at slot = position % capacity, so a global
// layer (capacity >= every position it will see) grows by reallocation, and a sliding layer keeps a ring.
// Positions [begin, end) are present, where begin = max(0, end - capacity); the family tracks `end`.
// A sliding layer processing chunks of up to C rows needs capacity >= window - 1 + C (kv_capacity below).
struct KvView {
  TensorView keys;    // bf16 [capacity, kv_heads, head_dim], contiguous
  TensorView values;  // bf16 [capacity, kv_heads, head_dim], contiguous
  int64_t end = 0;    // one past the last position written
};
int64_t kv_capacity(int64_t window, int64_t max_chunk_rows);

// A run of query rows [first_row, first_row + rows) that attend to one stream's cache.
struct KvSegment {
  int64_t first_row = 0;
  int64_t rows = 0;
  KvView kv;
};

struct AttentionSpec {
  int64_t window = 0;  // 0: global causal (key <= query); W > 0: sliding (query - W < key <= query)
  float scale = 1.0f;  // Gemma 4: 1.0 (q and k are RMS-normed instead)
};

// out[r] = bf16(table_row(ids[r]) * bf16(scale)) in fp32; table_row is the bf16 row, or for an affine table
// bf16(s * q + b). table: bf16 dense or affine [vocab, hidden]; out: bf16 [rows, hidden]. ids must lie in
// [0, vocab): the entry refuses others by index when the ids are in host memory (the CPU backend); a family
// checks token ids before uploading them to a device.
Status embed_rows(Backend& backend, const TensorView& ids, const Weight& table, float scale,
                  const TensorView& out);

// out = bf16((x * rsqrt(mean(x^2) + eps)) * w) over the last dim, all in fp32 (HF Gemma 4: w, not 1 + w).
// weight == nullptr: weightless (Gemma 4's v_norm). x, out: bf16 [rows, dim] or [rows, heads, dim] (per-head
// norm); weight: bf16 [dim].
Status rms_norm(Backend& backend, const TensorView& x, const TensorView* weight, float eps,
                const TensorView& out);

// Gemma 4's sandwich residual at a block's end: h_out = bf16(h + rms_norm(o, post_weight)), then
// h_out = bf16(h_out * bf16(*factor)) when a factor is given (the layer scalar), then next = rms_norm(h_out,
// next_weight) (the next block's input norm). Each step rounds where its own op does, so the result equals
// rms_norm, add, scale and rms_norm launched in turn. h, o, h_out, next: bf16 [rows, dim]; weights: bf16
// [dim]. h_out may be h; o is only read; next shares no byte with the others.
Status residual_norm(Backend& backend, const TensorView& h, const TensorView& o,
                     const TensorView& post_weight, std::optional<float> factor,
                     const TensorView& next_weight, float eps, const TensorView& h_out,
                     const TensorView& next);

// Per-head RMSNorm then RoPE, with HF's rounding: n = rms_norm(x) (bf16), cos/sin = bf16(cos/sin(f32(pos *
// inv_freq))), out = bf16(bf16(n * cos) + bf16(rotate_half(n) * sin)).
// x, out: bf16 [rows, heads, head_dim]; weight: bf16 [head_dim] or nullptr; positions: i32 [rows].
Status norm_rope(Backend& backend, const TensorView& x, const TensorView* weight, float eps,
                 const TensorView& positions, const RopeSpec& rope, const TensorView& out);

// Gemma 4's per-head norms before attention as one op: v_out = rms_norm(v_source) (weightless), q_out =
// norm_rope(q, q_weight), k_out = norm_rope(k, k_weight), each as its own op computes it. v_source may be k
// (Gemma 4's k_eq_v layers: the values are the raw keys' norm, taken before k_out is written, also when k_out
// is k). q, q_out: bf16 [rows, heads, head_dim]; k, k_out, v_source, v_out: bf16 [rows, kv_heads, head_dim];
// q_out may be q, k_out may be k, v_out may be v_source unless that is k; nothing else overlaps.
Status head_norms(Backend& backend, const TensorView& q, const TensorView& q_weight, const TensorView& k,
                  const TensorView& k_weight, const TensorView& v_source, const TensorView& positions,
                  const RopeSpec& rope, float eps, const TensorView& q_out, const TensorView& k_out,
                  const TensorView& v_out);
// The same, then k_out's and v_out's rows written into the segments' caches as kv_write(segments, positions,
// k_out, v_out) writes them (one launch where the backend fuses them): no cache may overlap an operand.
Status head_norms(Backend& backend, const TensorView& q, const TensorView& q_weight, const TensorView& k,
                  const TensorView& k_weight, const TensorView& v_source, const TensorView& positions,
                  const RopeSpec& rope, float eps, const TensorView& q_out, const TensorView& k_out,
                  const TensorView& v_out, std::span<const KvSegment> segments);

// head_norms' operands, for the ops that take them as one: q, k and the values' source normed into q_out,
// k_out and v_out (head_norms above).
struct HeadNormsOperands {
  TensorView q, q_weight, k, k_weight, v_source, positions;
  RopeSpec rope;
  float eps;
  TensorView q_out, k_out, v_out;
};

// Writes key and value rows at slot positions[r] % capacity. keys, values: bf16 [rows, kv_heads, head_dim].
Status kv_write(Backend& backend, const KvView& kv, const TensorView& positions, const TensorView& keys,
                const TensorView& values);
// The same for many streams in one launch: row r goes to the cache of the segment holding it. Segments
// cover rows [0, rows) in order (kv.end is not used), each has at most its capacity of rows, and no two
// segments' caches share a byte (their writes would race). Bits equal one kv_write per segment.
Status kv_write(Backend& backend, std::span<const KvSegment> segments, const TensorView& positions,
                const TensorView& keys, const TensorView& values);

// Causal (global or sliding) attention over the cache, GQA (query head h reads kv head h / (heads /
// kv_heads)). Query row r at position p sees the cached keys at positions k <= p (and k > p - window when
// sliding), which must all be present. With s_j = scale * (q · k_j) in fp32 (not rounded), m = max s and
// l = sum exp(s_j - m): p_j = bf16(exp(s_j - m) / l) (HF eager: softmax in fp32, then .to(bf16)), and
// out = bf16(sum p_j v_j) with fp32 accumulation. Keys are visited in absolute-position order with a fixed
// partition by absolute position, so a row's bits do not depend on the chunk it came in. q, out: bf16 [rows,
// heads, head_dim]; positions: i32 [rows]; segments cover rows [0, rows) in order.
Status attention(Backend& backend, const TensorView& q, const TensorView& positions,
                 std::span<const KvSegment> segments, const AttentionSpec& spec, const TensorView& out);

// out = x · Wᵀ with fp32 accumulation in a fixed order chosen from the weight shape alone; out is rounded to
// bf16 once, or kept in f32 when out is f32. Affine weights are dequantized to bf16(s * q + b) first (the
// weights HF runs when given the dequantized checkpoint). x: bf16 [rows, in]; out: bf16 or f32 [rows, out].
Status matmul(Backend& backend, const TensorView& x, const Weight& weight, const TensorView& out);

// out_i = x · W_iᵀ for 1 to kMatmulGroupMembers weights of one input width, each the bits ops::matmul gives
// (the backend may launch them as one). outs are disjoint from x and from each other.
struct MatmulMember {
  const Weight* weight;
  TensorView out;
};
Status matmul_group(Backend& backend, const TensorView& x, std::span<const MatmulMember> members);

// gate = x · Gᵀ, up = x · Uᵀ (matmul_group's bits), then out = geglu(gate, up) (geglu's bits), in one launch
// where the backend fuses them. gate and up: bf16 [rows, width], disjoint from x and each other; out: bf16
// [rows, width], disjoint from both or equal to one of them (which then holds out). The MLP's first half.
Status matmul_geglu(Backend& backend, const TensorView& x, const Weight& gate_weight, const Weight& up_weight,
                    const TensorView& gate, const TensorView& up, const TensorView& out);

// matmul_group(x, members), then head_norms(norms) into the segments' caches (each its own op's bits): the
// attention's q, k and v and their norms, in one launch after the matmuls where the backend adds the norms to
// their K-split reduce (CUDA, where norms reads and writes the members' outputs in place).
Status matmul_head_norms(Backend& backend, const TensorView& x, std::span<const MatmulMember> members,
                         const HeadNormsOperands& norms, std::span<const KvSegment> segments);

// out = bf16(bf16(gelu_tanh(gate)) * up); gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) in
// fp32. gate, up, out: bf16 [rows, width].
Status geglu(Backend& backend, const TensorView& gate, const TensorView& up, const TensorView& out);

// out = bf16(a + b). a, b, out: bf16 [rows, width]; out may be a or b.
Status add(Backend& backend, const TensorView& a, const TensorView& b, const TensorView& out);

// out = bf16(x * bf16(factor)) (Gemma 4's per-layer scalar). x, out: bf16 [rows, width]; out may be x.
Status scale(Backend& backend, const TensorView& x, float factor, const TensorView& out);

// out = bf16(bf16(tanh(bf16(x / cap))) * cap): HF's three bf16 ops. x: bf16 [rows, vocab]; out: bf16 or f32
// [rows, vocab] (f32 holds the same bf16 values); out may be x when both are bf16.
Status soft_cap(Backend& backend, const TensorView& x, float cap, const TensorView& out);

// out[r] = the lowest index of the largest value in row r; NaN is never chosen unless the whole row is NaN
// (then 0). x: bf16 or f32 [rows, vocab]; out: i32 [rows].
Status argmax(Backend& backend, const TensorView& x, const TensorView& out);

// out[r] = the keyed draw from row r under params[r] (ops/keyed_draw.hpp), -1 for a row with no non-NaN
// value. x: bf16 or f32 [rows, vocab], vocab <= 2^20; params: u8 [rows, 32] holding SampleParams; out: i32
// [rows].
Status sample(Backend& backend, const TensorView& x, const TensorView& params, const TensorView& out);

}  // namespace plumb::ops

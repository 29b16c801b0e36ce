#pragma once
// The device tensors one forward works in: activations, the head's logits and the draws. A forward allocates
// them afresh, or takes a set kept by ForwardGraphs so that a recorded graph's addresses stay valid.
#include <cstdint>

#include "core/error.hpp"
#include "models/gemma4/config.hpp"
#include "ops/backend.hpp"

namespace plumb::gemma4 {

struct Workspace {
  int64_t rows = 0;
  ops::DeviceTensor ids, positions;  // i32 [rows]
  ops::DeviceTensor h, xn, o;        // bf16 [rows, hidden]
  ops::DeviceTensor q, attn;         // bf16 [rows, widest heads * head_dim]
  ops::DeviceTensor k, v;            // bf16 [rows, widest kv_heads * head_dim]
  ops::DeviceTensor gate, up;        // bf16 [rows, intermediate]
};

// The head's output: bf16 logits, and f32 soft-capped ones when the config caps them.
struct HeadRows {
  int64_t rows = 0;
  ops::DeviceTensor raw;     // bf16 [rows, vocab]
  ops::DeviceTensor capped;  // f32 [rows, vocab], or none
  const ops::DeviceTensor& values() const { return capped.storage ? capped : raw; }
};

// Draws on the device: each logits row's options at the position its drawn token takes, and the ids.
struct DrawRows {
  ops::DeviceTensor params;  // u8 [rows, sizeof(SampleParams)]
  ops::DeviceTensor ids;     // i32 [rows]
};

struct ForwardTensors {
  Workspace space;
  HeadRows head;
  DrawRows draws;
};

// Tensors for `rows` rows, `logit_rows` of them through the head and `draw_rows` of those drawn (0 or
// logit_rows).
Result<ForwardTensors> allocate_forward(ops::Backend& backend, const Config& config, int64_t rows,
                                        int64_t logit_rows, int64_t draw_rows);

}  // namespace plumb::gemma4

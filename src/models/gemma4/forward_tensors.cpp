#include "models/gemma4/forward_tensors.hpp"

#include <algorithm>

#include "models/gemma4/try_assign.hpp"
#include "ops/keyed_draw.hpp"

namespace plumb::gemma4 {

namespace {

struct Slot {
  ops::DeviceTensor* tensor;
  DType dtype;
  Shape shape;
};

Status allocate_slots(ops::Backend& backend, std::initializer_list<Slot> slots) {
  for (const Slot& slot : slots) {
    PLUMB_TRY_ASSIGN(tensor, backend.allocate(slot.dtype, slot.shape));
    *slot.tensor = std::move(tensor);
  }
  return {};
}

}  // namespace

Result<ForwardTensors> allocate_forward(ops::Backend& backend, const Config& config, int64_t rows,
                                        int64_t logit_rows, int64_t draw_rows) {
  int64_t q_width = 0, kv_width = 0;
  for (const LayerSpec& layer : config.layers) {
    q_width = std::max(q_width, layer.heads * layer.head_dim);
    kv_width = std::max(kv_width, layer.kv_heads * layer.head_dim);
  }
  ForwardTensors tensors;
  Workspace& space = tensors.space;
  space.rows = rows;
  PLUMB_TRY(allocate_slots(backend, {
                                        {&space.ids, DType::i32, {rows}},
                                        {&space.positions, DType::i32, {rows}},
                                        {&space.h, DType::bf16, {rows, config.hidden}},
                                        {&space.xn, DType::bf16, {rows, config.hidden}},
                                        {&space.o, DType::bf16, {rows, config.hidden}},
                                        {&space.q, DType::bf16, {rows, q_width}},
                                        {&space.attn, DType::bf16, {rows, q_width}},
                                        {&space.k, DType::bf16, {rows, kv_width}},
                                        {&space.v, DType::bf16, {rows, kv_width}},
                                        {&space.gate, DType::bf16, {rows, config.intermediate}},
                                        {&space.up, DType::bf16, {rows, config.intermediate}},
                                    }));
  HeadRows& head = tensors.head;
  head.rows = logit_rows;
  if (logit_rows > 0) {
    PLUMB_TRY(allocate_slots(backend, {{&head.raw, DType::bf16, {logit_rows, config.vocab}}}));
    if (config.final_logit_softcapping)
      PLUMB_TRY(allocate_slots(backend, {{&head.capped, DType::f32, {logit_rows, config.vocab}}}));
  }
  if (draw_rows > 0) {
    const auto bytes = static_cast<int64_t>(sizeof(ops::SampleParams));
    PLUMB_TRY(allocate_slots(backend, {{&tensors.draws.params, DType::u8, {draw_rows, bytes}},
                                       {&tensors.draws.ids, DType::i32, {draw_rows}}}));
  }
  return tensors;
}

}  // namespace plumb::gemma4

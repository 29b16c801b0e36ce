#pragma once
// The keyed draw on the host (keyed_draw.hpp's steps, by sorting): the CPU backend's sample op, the
// contract's reference for every backend's, and the engine's draw from downloaded logits.
#include <cstdint>
#include <span>

#include "core/dtype.hpp"
#include "ops/keyed_draw.hpp"

namespace plumb::ops {

// Element `at` of bf16 or f32 logits as a float.
float logit_value(const void* logits, DType dtype, int64_t at);

// Row `row` of bf16 or f32 logits [rows, stride] into `out` (out.size() values).
void read_logits_row(const void* logits, DType dtype, int64_t stride, int64_t row, std::span<float> out);

// The lowest id of the largest non-NaN value; -1 for an empty or all-NaN row.
int32_t greedy_id(std::span<const float> logits);

// The token drawn from `logits` for params.position under params (temperature, top-k, top-p, min-p, seed), by
// sorting the candidates: the reference the contract holds every backend's sample op to.
int32_t draw_keyed(std::span<const float> logits, const SampleParams& params);

// The same id by weighted quickselects, in expected linear time (the CPU backend's sample op; a full sort of
// Gemma 4's 262,144 candidates takes tens of milliseconds).
int32_t draw_keyed_by_selection(std::span<const float> logits, const SampleParams& params);

}  // namespace plumb::ops

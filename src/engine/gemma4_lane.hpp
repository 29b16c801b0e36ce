#pragma once
// Gemma 4 as a lane model: per-stream KV caches (gemma4::StreamCache) and the forward over a batch of stream
// chunks. The lane owns the backend and the model.
#include <memory>

#include "engine/lane_model.hpp"
#include "models/gemma4/model.hpp"
#include "ops/backend.hpp"

namespace plumb::engine {

// `path_invariant`: whether I2 holds for Gemma 4 on this backend (the CPU backend's ops keep it and its tests
// check it); when false the prompt cache keeps states only at prompt ends.
std::unique_ptr<LaneModel> make_gemma4_lane(std::unique_ptr<ops::Backend> backend, gemma4::Model model,
                                            bool path_invariant = true);

}  // namespace plumb::engine

#pragma once
// Every tensor the Gemma 4 text forward reads, declared with its expected shape and placed on a backend.
// Names: HF `model.language_model.*` (conditional generation), HF `model.*` (Gemma4ForCausalLM) or MLX
// `language_model.model.*`. Linear and embedding weights are dense (bf16, f16, f32) or MLX affine; norms and
// the layer scalar are read as bf16. A missing tensor, a wrong shape or dtype, and packed shapes that
// disagree with the declared bits or group are errors naming the tensor; tensors nobody reads are listed.
#include <memory>
#include <string>
#include <vector>

#include "core/safetensors.hpp"
#include "models/gemma4/config.hpp"
#include "ops/backend.hpp"
#include "ops/ops.hpp"

namespace plumb::gemma4 {

struct LayerWeights {
  TensorView input_norm;             // bf16 [hidden]
  TensorView post_attention_norm;    // bf16 [hidden]
  TensorView pre_feedforward_norm;   // bf16 [hidden]
  TensorView post_feedforward_norm;  // bf16 [hidden]
  TensorView q_norm;                 // bf16 [head_dim]
  TensorView k_norm;                 // bf16 [head_dim]
  ops::Weight q_proj;                // [heads * head_dim, hidden]
  ops::Weight k_proj;                // [kv_heads * head_dim, hidden]
  ops::Weight v_proj;                // [kv_heads * head_dim, hidden]; empty when keys are values
  ops::Weight o_proj;                // [hidden, heads * head_dim]
  ops::Weight gate_proj;             // [intermediate, hidden]
  ops::Weight up_proj;               // [intermediate, hidden]
  ops::Weight down_proj;             // [hidden, intermediate]
  float layer_scalar = 1.0f;         // a bf16 value
};

enum class Naming : uint8_t { hf_multimodal, hf_causal, mlx };

struct Weights {
  Naming naming = Naming::hf_multimodal;
  ops::Weight embed;  // [vocab, hidden]: bf16 dense or affine
  ops::Weight head;   // [vocab, hidden]: the embedding when tied
  TensorView final_norm;
  std::vector<LayerWeights> layers;
  std::vector<std::string> unused;  // checkpoint tensors the forward does not read, sorted
  // Device memory that the views above point into (and, on the CPU backend, the mapped checkpoint).
  std::vector<ops::DeviceTensor> storage;
  std::shared_ptr<const Checkpoint> checkpoint;
};

// Declares, checks and places every tensor. On the CPU backend, aligned bf16 and packed tensors are read in
// place from the mapped checkpoint; everything else is uploaded.
Result<Weights> load_weights(const Config& config, std::shared_ptr<const Checkpoint> checkpoint,
                             ops::Backend& backend);

}  // namespace plumb::gemma4

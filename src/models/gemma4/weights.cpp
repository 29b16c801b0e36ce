#include "models/gemma4/weights.hpp"

#include <fmt/format.h>

#include "models/gemma4/weight_loader.hpp"

namespace plumb::gemma4 {

namespace {

// Where the text model's tensors live under each naming, and where an untied head lives.
struct NamingScheme {
  Naming naming;
  const char* prefix;
  const char* head;
};
constexpr NamingScheme kSchemes[] = {
    {Naming::hf_multimodal, "model.language_model.", "lm_head"},
    {Naming::mlx, "language_model.model.", "language_model.lm_head"},
    {Naming::hf_causal, "model.", "lm_head"},
};
constexpr const char* kMlxPrefix = "language_model.model.";

Result<NamingScheme> detect_naming(const WeightLoader& loader) {
  for (const NamingScheme& scheme : kSchemes)
    if (loader.has(std::string(scheme.prefix) + "embed_tokens.weight")) return scheme;
  return error_at(loader.where(), "tensor", "model.language_model.embed_tokens.weight", "is missing",
                  "the embedding under model.language_model.*, model.* or language_model.model.*",
                  "no embedding under any of them");
}

class LayerReader {
 public:
  LayerReader(WeightLoader& loader, const NamingScheme& scheme, const Config& config, size_t index)
      : loader_(loader), config_(config), spec_(config.layers[index]) {
    relative_ = fmt::format("layers.{}.", index);
    prefix_ = scheme.prefix + relative_;
  }

  Result<ops::Weight> linear(const std::string& module, int64_t out, int64_t in) {
    return loader_.linear(prefix_ + module, kMlxPrefix + relative_ + module, out, in);
  }
  Result<TensorView> norm(const std::string& module, int64_t dim) {
    return loader_.vector_bf16(prefix_ + module + ".weight", dim);
  }

  Result<LayerWeights> read() {
    const int64_t hidden = config_.hidden, q_width = spec_.heads * spec_.head_dim;
    const int64_t kv_width = spec_.kv_heads * spec_.head_dim, width = config_.intermediate;
    LayerWeights layer;
    PLUMB_TRY_ASSIGN(input_norm, norm("input_layernorm", hidden));
    PLUMB_TRY_ASSIGN(post_attention_norm, norm("post_attention_layernorm", hidden));
    PLUMB_TRY_ASSIGN(pre_feedforward_norm, norm("pre_feedforward_layernorm", hidden));
    PLUMB_TRY_ASSIGN(post_feedforward_norm, norm("post_feedforward_layernorm", hidden));
    PLUMB_TRY_ASSIGN(q_norm, norm("self_attn.q_norm", spec_.head_dim));
    PLUMB_TRY_ASSIGN(k_norm, norm("self_attn.k_norm", spec_.head_dim));
    PLUMB_TRY_ASSIGN(q_proj, linear("self_attn.q_proj", q_width, hidden));
    PLUMB_TRY_ASSIGN(k_proj, linear("self_attn.k_proj", kv_width, hidden));
    if (!spec_.k_eq_v) {
      PLUMB_TRY_ASSIGN(v_proj, linear("self_attn.v_proj", kv_width, hidden));
      layer.v_proj = std::move(v_proj);
    }
    PLUMB_TRY_ASSIGN(o_proj, linear("self_attn.o_proj", hidden, q_width));
    PLUMB_TRY_ASSIGN(gate_proj, linear("mlp.gate_proj", width, hidden));
    PLUMB_TRY_ASSIGN(up_proj, linear("mlp.up_proj", width, hidden));
    PLUMB_TRY_ASSIGN(down_proj, linear("mlp.down_proj", hidden, width));
    PLUMB_TRY_ASSIGN(layer_scalar, loader_.scalar_bf16(prefix_ + "layer_scalar"));
    layer.input_norm = input_norm;
    layer.post_attention_norm = post_attention_norm;
    layer.pre_feedforward_norm = pre_feedforward_norm;
    layer.post_feedforward_norm = post_feedforward_norm;
    layer.q_norm = q_norm;
    layer.k_norm = k_norm;
    layer.q_proj = std::move(q_proj);
    layer.k_proj = std::move(k_proj);
    layer.o_proj = std::move(o_proj);
    layer.gate_proj = std::move(gate_proj);
    layer.up_proj = std::move(up_proj);
    layer.down_proj = std::move(down_proj);
    layer.layer_scalar = layer_scalar;
    return layer;
  }

 private:
  WeightLoader& loader_;
  const Config& config_;
  const LayerSpec& spec_;
  std::string relative_;
  std::string prefix_;
};

// The embedding: quantized when config.json says so, else read as bf16 (what embed_rows reads).
Result<ops::Weight> read_embedding(WeightLoader& loader, const NamingScheme& scheme, const Config& config) {
  const std::string module = std::string(scheme.prefix) + "embed_tokens";
  const std::string canonical = std::string(kMlxPrefix) + "embed_tokens";
  if (loader.quantization_of(module, canonical))
    return loader.linear(module, canonical, config.vocab, config.hidden);
  return loader.dense_bf16(module, config.vocab, config.hidden);
}

}  // namespace

Result<Weights> load_weights(const Config& config, std::shared_ptr<const Checkpoint> checkpoint,
                             ops::Backend& backend) {
  Weights weights;
  weights.checkpoint = checkpoint;
  WeightLoader loader(*checkpoint, config.quantization, backend, weights.storage);
  PLUMB_TRY_ASSIGN(scheme, detect_naming(loader));
  weights.naming = scheme.naming;
  PLUMB_TRY_ASSIGN(embed, read_embedding(loader, scheme, config));
  weights.embed = std::move(embed);
  for (size_t index = 0; index < config.layers.size(); ++index) {
    LayerReader reader(loader, scheme, config, index);
    PLUMB_TRY_ASSIGN(layer, reader.read());
    weights.layers.push_back(std::move(layer));
  }
  PLUMB_TRY_ASSIGN(final_norm, loader.vector_bf16(std::string(scheme.prefix) + "norm.weight", config.hidden));
  weights.final_norm = final_norm;
  if (config.tie_word_embeddings) {
    weights.head = weights.embed;
  } else {
    PLUMB_TRY_ASSIGN(head, loader.linear(scheme.head, "language_model.lm_head", config.vocab, config.hidden));
    weights.head = std::move(head);
  }
  weights.unused = loader.unused();
  return weights;
}

}  // namespace plumb::gemma4

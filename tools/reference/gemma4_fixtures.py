#!/usr/bin/env python3
"""Reference fixtures for Plumb's Gemma 4 text forward, from Hugging Face transformers.

Builds tiny random-weight Gemma 4 models (several geometries: sliding windows shorter than the sequence, norms and
layer scalars away from 1, the soft cap set, keys reused as values and proportional RoPE on the global layers),
writes each checkpoint (config.json + model.safetensors, bf16) and HF's logits for one token sequence:
hf_fp32.npy (the bf16 weights run in float32, eager attention) and hf_bf16.npy (bf16, sdpa attention,
transformers' default; bf16 eager's errors are recorded in manifest.json). MLX affine variants come from this
script's own quantizer (MLX's rule and bit layout); their HF logits are computed on the dequantized weights
bf16(f32(scale * q) + bias), which is what Plumb's ops compute from the packed ones.

Needs torch, transformers 5.x and numpy only (the safetensors files are written here). Deterministic: CPU, fixed
seeds, no TF32. Usage:

    python3 tools/reference/gemma4_fixtures.py OUTDIR

then copy OUTDIR's contents to tests/fixtures/gemma4/ (about 8 MB). manifest.json lists every variant, the token
sequence and the versions used.
"""

import json
import os
import struct
import sys

import numpy as np
import torch
import transformers

SEQUENCE_LENGTH = 40
VOCAB = 512
SEED = 20260601


# ---------------------------------------------------------------------------------------------------------------
# bf16 and safetensors


def bf16_bits(values):
    """float32 array -> uint16 bf16 bits, round to nearest even (no NaNs here)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors, metadata):
    """tensors: name -> (dtype string, shape, numpy array of the stored element type)."""
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        dtype, shape, array = tensors[name]
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", len(text)))
        file.write(text)
        for blob in blobs:
            file.write(blob)


def write_npy(path, array):
    np.save(path, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)


# ---------------------------------------------------------------------------------------------------------------
# MLX affine quantization


def quantize_rows(weight, bits, group):
    """weight: float32 [out, in] -> (packed uint32 [out, in*bits/32], scales bits, biases bits), MLX's rule."""
    out_dim, in_dim = weight.shape
    levels = np.float32(2**bits - 1)
    groups = weight.reshape(out_dim, in_dim // group, group).astype(np.float32)
    w_min = groups.min(axis=2)
    w_max = groups.max(axis=2)
    scale = np.maximum((w_max - w_min) / levels, np.float32(1e-7)).astype(np.float32)
    low_edge = np.abs(w_min) > np.abs(w_max)
    scale = np.where(low_edge, scale, -scale).astype(np.float32)
    edge = np.where(low_edge, w_min, w_max).astype(np.float32)
    q0 = np.rint(edge / scale).astype(np.float32)
    at_zero = q0 == 0
    scale = np.where(at_zero, scale, edge / np.where(at_zero, 1, q0)).astype(np.float32)
    bias = np.where(at_zero, np.float32(0), edge).astype(np.float32)
    codes = np.rint((groups - bias[..., None]) / scale[..., None])
    codes = np.clip(codes, 0, levels).astype(np.uint64).reshape(out_dim, in_dim)
    return pack_rows(codes, bits), bf16_bits(scale), bf16_bits(bias)


def pack_rows(codes, bits):
    """Each row a little-endian bit stream, element j at bits [j*bits, (j+1)*bits)."""
    out_dim, in_dim = codes.shape
    words = np.zeros((out_dim, in_dim * bits // 32), dtype=np.uint32)
    for j in range(in_dim):
        bit = j * bits
        word, shift = divmod(bit, 32)
        value = codes[:, j] << np.uint64(shift)
        words[:, word] |= (value & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        if shift + bits > 32:
            words[:, word + 1] |= (value >> np.uint64(32)).astype(np.uint32)
    return words


def dequantize_rows(packed, scale_bits, bias_bits, bits, group, in_dim):
    """bf16(f32(scale * q) + bias), the weights Plumb's ops use (docs/numerics.md)."""
    out_dim = packed.shape[0]
    codes = np.zeros((out_dim, in_dim), dtype=np.uint64)
    wide = packed.astype(np.uint64)
    for j in range(in_dim):
        word, shift = divmod(j * bits, 32)
        value = wide[:, word] >> np.uint64(shift)
        if shift + bits > 32:
            value |= wide[:, word + 1] << np.uint64(32 - shift)
        codes[:, j] = value & np.uint64(2**bits - 1)
    scale = np.repeat(bf16_values(scale_bits), group, axis=1)
    bias = np.repeat(bf16_values(bias_bits), group, axis=1)
    values = (scale * codes.astype(np.float32)).astype(np.float32) + bias
    return bf16_values(bf16_bits(values.astype(np.float32)))


# ---------------------------------------------------------------------------------------------------------------
# Models


def text_fields(hidden, intermediate, layer_types, heads, kv_heads, head_dim, global_head_dim, global_kv_heads,
                k_eq_v, window, softcap, full_theta=1e6, partial=0.25, sliding_theta=1e4):
    return dict(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=len(layer_types),
        layer_types=list(layer_types),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        global_head_dim=global_head_dim,
        num_global_key_value_heads=global_kv_heads,
        attention_k_eq_v=k_eq_v,
        sliding_window=window,
        final_logit_softcapping=softcap,
        rms_norm_eps=1e-6,
        max_position_embeddings=4096,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": sliding_theta},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": partial, "rope_theta": full_theta},
        },
    )


S, F = "sliding_attention", "full_attention"

GEOMETRIES = {
    # The 12B's shape in miniature: five sliding layers then a global one with a single KV head, keys as values.
    "unified": dict(
        kind="unified",
        text=text_fields(128, 128, [S, S, S, S, S, F], 4, 2, 32, 64, 1, True, 8, 30.0),
    ),
    # The 31B's shape in miniature (Gemma4ForCausalLM): two global layers with two KV heads, a short window, a
    # tighter soft cap.
    "causal": dict(
        kind="causal",
        text=text_fields(128, 128, [S, S, F, S, S, F], 8, 4, 16, 32, 2, True, 5, 15.0, full_theta=5e5),
    ),
    # Global layers with their own value projection (attention_k_eq_v false) and a half-rotated RoPE.
    "separate_values": dict(
        kind="causal",
        text=text_fields(128, 128, [S, F, S, F], 4, 2, 32, 64, 2, False, 6, 30.0, partial=0.5),
    ),
}

AFFINE_VARIANTS = [
    # (bits, group, per-module overrides as {module suffix: (bits, group) or None})
    (4, 64, {}),
    (3, 32, {}),
    (8, 128, {}),
    (2, 64, {}),
    (5, 32, {}),
    (6, 128, {"layers.0.mlp.down_proj": (8, 64), "layers.1.self_attn.q_proj": None}),
]


def build_model(geometry):
    torch.manual_seed(SEED)
    fields = dict(geometry["text"])
    if geometry["kind"] == "unified":
        from transformers.models.gemma4_unified.configuration_gemma4_unified import (
            Gemma4UnifiedConfig,
            Gemma4UnifiedTextConfig,
        )
        from transformers.models.gemma4_unified.modeling_gemma4_unified import Gemma4UnifiedForConditionalGeneration

        text = Gemma4UnifiedTextConfig(**fields)
        config = Gemma4UnifiedConfig(text_config=text, vision_config=None, audio_config=None)
        model = Gemma4UnifiedForConditionalGeneration(config)
    else:
        from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig
        from transformers.models.gemma4.modeling_gemma4 import Gemma4ForCausalLM

        fields.update(hidden_size_per_layer_input=0, num_kv_shared_layers=0, enable_moe_block=False,
                      use_double_wide_mlp=False)
        config = Gemma4TextConfig(**fields)
        model = Gemma4ForCausalLM(config)
    randomize(model)
    # The checkpoint holds bf16 weights; every reference run below uses exactly these values. (RoPE frequencies and
    # the embedding scale are computed buffers, not weights: they stay as transformers makes them.)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(parameter.to(torch.bfloat16).to(parameter.dtype))
        for name, buffer in model.named_buffers():
            if name.endswith("layer_scalar"):
                buffer.copy_(buffer.to(torch.bfloat16).to(buffer.dtype))
    return model.eval()


def randomize(model):
    """Weights with the spread that exercises the forward: linears 1/sqrt(in), norms and scalars away from 1."""
    generator = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for name, parameter in sorted(model.named_parameters()):
            if name.endswith("embed_tokens.weight"):
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.35)
            elif parameter.dim() == 2:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) / parameter.shape[1] ** 0.5)
            elif parameter.dim() == 1:
                parameter.copy_(1.0 + 0.3 * torch.randn(parameter.shape, generator=generator))
        for name, buffer in sorted(model.named_buffers()):
            if name.endswith("layer_scalar"):
                buffer.copy_(0.6 + 0.8 * torch.rand(buffer.shape, generator=generator))


def text_state(model):
    """The text model's tensors under the names transformers writes (tied head dropped)."""
    state = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and model.config.get_text_config().tie_word_embeddings:
            continue
        if "rotary_emb" in name:
            continue
        state[name] = tensor.detach().to(torch.float32).cpu().numpy()
    return state


def logits_of(model, tokens, dtype, attention):
    # RoPE inverse frequencies stay float32, as when transformers loads a bf16 checkpoint (model.to would cast them).
    kept = {name: buffer.clone() for name, buffer in model.named_buffers() if "inv_freq" in name}
    model = model.to(dtype)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name in kept:
                buffer.data = kept[name].to(torch.float32)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(attention)
    else:
        for config in (model.config, model.config.get_text_config()):
            config._attn_implementation = attention
    with torch.no_grad():
        output = model(input_ids=torch.tensor([tokens]), use_cache=False)
    return output.logits[0].to(torch.float32).cpu().numpy()


def reference_logits(model, tokens):
    """fp32 (eager) and bf16 (sdpa) logits, and for the record bf16 eager's errors against fp32."""
    fp32 = logits_of(model, tokens, torch.float32, "eager")
    bf16 = logits_of(model, tokens, torch.bfloat16, "sdpa")
    eager = logits_of(model, tokens, torch.bfloat16, "eager")
    record = {
        "hf_bf16_sdpa_max_abs_error": float(np.abs(bf16 - fp32).max()),
        "hf_bf16_sdpa_mean_abs_error": float(np.abs(bf16 - fp32).mean()),
        "hf_bf16_eager_max_abs_error": float(np.abs(eager - fp32).max()),
        "hf_bf16_eager_mean_abs_error": float(np.abs(eager - fp32).mean()),
    }
    return {"hf_fp32": fp32, "hf_bf16": bf16}, record


def config_json(model, quantization=None):
    document = json.loads(model.config.to_json_string(use_diff=False))
    if quantization is not None:
        document["quantization"] = quantization
        document["quantization_config"] = quantization
    return document


def write_variant(outdir, name, config, tensors, metadata, logits):
    path = os.path.join(outdir, name)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as file:
        json.dump(config, file, indent=2, sort_keys=True)
        file.write("\n")
    write_safetensors(os.path.join(path, "model.safetensors"), tensors, metadata)
    for key, values in logits.items():
        write_npy(os.path.join(path, key + ".npy"), values)


def bf16_tensors(state):
    return {name: ("BF16", value.shape, bf16_bits(value)) for name, value in state.items()}


def mlx_name(name):
    """HF text names -> MLX names (language_model.model.*)."""
    for prefix in ("model.language_model.", "model."):
        if name.startswith(prefix):
            return "language_model.model." + name[len(prefix):]
    return name


def affine_variant(model, state, bits, group, overrides):
    """MLX affine tensors and the dequantized state for HF; quantizes every linear and the embedding."""
    tensors, dequantized = {}, {}
    quantization = {"group_size": group, "bits": bits, "mode": "affine"}
    for name, value in state.items():
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        target = mlx_name(name)
        spec = (bits, group)
        if module is not None and value.ndim == 2:
            for suffix, override in overrides.items():
                if module.endswith("." + suffix):
                    spec = override
                    quantization[mlx_name(module)] = (
                        False if override is None else {"group_size": override[1], "bits": override[0]}
                    )
        if module is None or value.ndim != 2 or spec is None:
            tensors[target] = ("BF16", value.shape, bf16_bits(value))
            dequantized[name] = value
            continue
        spec_bits, spec_group = spec
        packed, scales, biases = quantize_rows(value, spec_bits, spec_group)
        base = target[: -len(".weight")]
        tensors[base + ".weight"] = ("U32", packed.shape, packed)
        tensors[base + ".scales"] = ("BF16", scales.shape, scales)
        tensors[base + ".biases"] = ("BF16", biases.shape, biases)
        dequantized[name] = dequantize_rows(packed, scales, biases, spec_bits, spec_group, value.shape[1])
    return tensors, dequantized, quantization


def load_state(model, state):
    with torch.no_grad():
        current = model.state_dict()
        for name, value in state.items():
            current[name].copy_(torch.from_numpy(value).to(current[name].dtype))
        if model.config.get_text_config().tie_word_embeddings and "lm_head.weight" in current:
            embed = [n for n in state if n.endswith("embed_tokens.weight")][0]
            current["lm_head.weight"].copy_(torch.from_numpy(state[embed]))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    rng = np.random.default_rng(SEED)
    tokens = [2] + [int(t) for t in rng.integers(5, VOCAB, size=SEQUENCE_LENGTH - 1)]
    manifest = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "tokens": tokens,
        "variants": [],
    }
    for geometry_name, geometry in GEOMETRIES.items():
        model = build_model(geometry)
        state = text_state(model)
        logits, record = reference_logits(model, tokens)
        write_variant(outdir, geometry_name, config_json(model), bf16_tensors(state), {"format": "pt"}, logits)
        manifest["variants"].append({"name": geometry_name, "geometry": geometry_name, "format": "bf16", **record})
        print(f"{geometry_name}: {model.__class__.__name__}, {sum(v.size for v in state.values())} weights", flush=True)
        if geometry_name != "unified":
            continue
        for bits, group, overrides in AFFINE_VARIANTS:
            name = f"{geometry_name}_affine{bits}g{group}"
            tensors, dequantized, quantization = affine_variant(model, state, bits, group, overrides)
            variant_model = build_model(geometry)
            load_state(variant_model, dequantized)
            logits, record = reference_logits(variant_model, tokens)
            write_variant(outdir, name, config_json(variant_model, quantization), tensors, {"format": "mlx"}, logits)
            manifest["variants"].append({"name": name, "geometry": geometry_name, "format": "affine",
                                         "bits": bits, "group": group, **record})
            print(f"{name}: done", flush=True)
    with open(os.path.join(outdir, "manifest.json"), "w") as file:
        json.dump(manifest, file, indent=2)
        file.write("\n")


if __name__ == "__main__":
    main()

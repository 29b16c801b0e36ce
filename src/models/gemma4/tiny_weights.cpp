// The random weights of make-tiny checkpoints: every value comes from a counter-based generator keyed by
// (seed, tensor name, index), so the files depend neither on the order tensors are written in, nor on the
// thread count, nor on the platform. Large geometries are written in shards with an index, generated with
// several threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/half.hpp"
#include "core/safetensors.hpp"
#include "models/gemma4/tiny.hpp"
#include "ops/affine.hpp"

namespace plumb::gemma4 {

namespace {

uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull ^ mix(seed);
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return mix(hash);
}

// Uniform in [-1, 1), exact in double.
double uniform(uint64_t key, int64_t index) {
  return static_cast<double>(mix(key ^ mix(static_cast<uint64_t>(index))) >> 11) * 0x1.0p-52 - 1.0;
}

struct Draw {
  double center;
  double spread;  // values are center + spread * uniform
};

struct TinyTensor {
  std::string name;  // the module (or buffer) name
  Shape shape;
  Draw draw;
  bool linear;  // quantized when the checkpoint is
};

int thread_count(const TinyOptions& options) {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return options.threads > 0 ? options.threads : static_cast<int>(std::min(hardware, 32u));
}

// Runs work(begin, end) over [0, count) in `threads` contiguous pieces.
template <class Work>
void in_parallel(int64_t count, int threads, Work&& work) {
  const int64_t pieces = std::clamp<int64_t>(count / 65536, 1, threads);
  std::vector<std::thread> workers;
  for (int64_t piece = 0; piece < pieces; ++piece)
    workers.emplace_back([&, piece] { work(count * piece / pieces, count * (piece + 1) / pieces); });
  for (std::thread& worker : workers) worker.join();
}

std::vector<float> draw_values(const TinyTensor& tensor, const TinyOptions& options) {
  const uint64_t key = name_key(options.seed, tensor.name);
  std::vector<float> values(static_cast<size_t>(shape_elements(tensor.shape)));
  in_parallel(static_cast<int64_t>(values.size()), thread_count(options), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      values[static_cast<size_t>(i)] =
          round_bf16(static_cast<float>(tensor.draw.center + tensor.draw.spread * uniform(key, i)));
  });
  return values;
}

std::vector<TinyTensor> tiny_tensors(const TinyOptions& options, const std::string& prefix) {
  const int64_t hidden = options.hidden, width = options.intermediate;
  const Draw norm{1.0, 0.25};
  auto linear = [](int64_t in) { return Draw{0.0, std::sqrt(3.0 / static_cast<double>(in))}; };
  std::vector<TinyTensor> tensors;
  tensors.push_back({prefix + "embed_tokens", {tiny_model_vocab(options), hidden}, {0.0, 0.3}, true});
  for (int64_t i = 0; i < options.layers; ++i) {
    const bool full = tiny_layer_is_full(options, i);
    const int64_t head_dim = full ? options.global_head_dim : options.head_dim;
    const int64_t kv_heads = full ? options.global_kv_heads : options.kv_heads;
    const int64_t q_width = options.heads * head_dim, kv_width = kv_heads * head_dim;
    const std::string layer = fmt::format("{}layers.{}.", prefix, i);
    for (const char* name : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                             "post_feedforward_layernorm"})
      tensors.push_back({layer + name, {hidden}, norm, false});
    tensors.push_back({layer + "self_attn.q_norm", {head_dim}, norm, false});
    tensors.push_back({layer + "self_attn.k_norm", {head_dim}, norm, false});
    tensors.push_back({layer + "self_attn.q_proj", {q_width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "self_attn.k_proj", {kv_width, hidden}, linear(hidden), true});
    if (!full) tensors.push_back({layer + "self_attn.v_proj", {kv_width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "self_attn.o_proj", {hidden, q_width}, linear(q_width), true});
    tensors.push_back({layer + "mlp.gate_proj", {width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "mlp.up_proj", {width, hidden}, linear(hidden), true});
    tensors.push_back({layer + "mlp.down_proj", {hidden, width}, linear(width), true});
    tensors.push_back({layer + "layer_scalar", {1}, {0.75, 0.25}, false});
  }
  tensors.push_back({prefix + "norm", {hidden}, norm, false});
  return tensors;
}

bool quantized(const TinyTensor& tensor, const TinyOptions& options) {
  return tensor.linear && options.bits.has_value();
}

// Bytes the tensor takes in the file (packed, scales and biases when quantized).
int64_t stored_bytes(const TinyTensor& tensor, const TinyOptions& options) {
  if (!quantized(tensor, options)) return shape_elements(tensor.shape) * 2;
  const int64_t out = tensor.shape[0], in = tensor.shape[1];
  return out * ops::affine_row_words(in, *options.bits) * 4 + 2 * out * (in / options.group) * 2;
}

// Owns the bytes of a shard's tensors until they are written.
struct TensorStore {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<TensorBytes> entries;

  template <class T>
  void add(std::string name, DType dtype, Shape shape, const std::vector<T>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(T));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    buffers.push_back(std::move(bytes));
    entries.push_back({std::move(name), dtype, std::move(shape), buffers.back()});
  }
};

// Quantizes row blocks on several threads; rows are independent, so the result equals one call's.
ops::AffineTensor quantize(const std::vector<float>& values, int64_t out, int64_t in,
                           const TinyOptions& options) {
  const int threads = thread_count(options);
  const int64_t blocks = std::clamp<int64_t>(out / 64, 1, threads);
  std::vector<ops::AffineTensor> parts(static_cast<size_t>(blocks));
  std::vector<std::thread> workers;
  for (int64_t b = 0; b < blocks; ++b) {
    workers.emplace_back([&, b] {
      const int64_t first = out * b / blocks, rows = out * (b + 1) / blocks - first;
      parts[static_cast<size_t>(b)] = ops::affine_quantize(
          std::span(values).subspan(static_cast<size_t>(first * in), static_cast<size_t>(rows * in)), rows,
          in, *options.bits, options.group);
    });
  }
  for (std::thread& worker : workers) worker.join();
  ops::AffineTensor joined;
  for (const ops::AffineTensor& part : parts) {
    joined.packed.insert(joined.packed.end(), part.packed.begin(), part.packed.end());
    joined.scales.insert(joined.scales.end(), part.scales.begin(), part.scales.end());
    joined.biases.insert(joined.biases.end(), part.biases.begin(), part.biases.end());
  }
  return joined;
}

void add_tensor(TensorStore& store, const TinyTensor& tensor, const TinyOptions& options) {
  const std::vector<float> values = draw_values(tensor, options);
  const bool is_module = tensor.linear || tensor.name.ends_with("norm") || tensor.name.ends_with("layernorm");
  const std::string weight_name = is_module ? tensor.name + ".weight" : tensor.name;
  if (quantized(tensor, options)) {
    const int64_t out = tensor.shape[0], in = tensor.shape[1];
    const ops::AffineTensor packed = quantize(values, out, in, options);
    store.add(weight_name, DType::u32, {out, ops::affine_row_words(in, *options.bits)}, packed.packed);
    store.add(tensor.name + ".scales", DType::bf16, {out, in / options.group}, packed.scales);
    store.add(tensor.name + ".biases", DType::bf16, {out, in / options.group}, packed.biases);
    return;
  }
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
  store.add(weight_name, DType::bf16, tensor.shape, bits);
}

// Consecutive tensors grouped into shards of at most max_shard_bytes (a larger tensor gets a shard alone).
std::vector<std::vector<TinyTensor>> shards_of(const std::vector<TinyTensor>& tensors,
                                               const TinyOptions& options) {
  std::vector<std::vector<TinyTensor>> shards(1);
  int64_t bytes = 0;
  for (const TinyTensor& tensor : tensors) {
    const int64_t size = stored_bytes(tensor, options);
    if (!shards.back().empty() && bytes + size > options.max_shard_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(tensor);
    bytes += size;
  }
  return shards;
}

}  // namespace

Status write_tiny_weights(const std::string& dir, const TinyOptions& options) {
  const std::string prefix = options.bits ? "language_model.model." : "model.language_model.";
  const std::map<std::string, std::string> metadata = {{"format", options.bits ? "mlx" : "pt"}};
  const auto shards = shards_of(tiny_tensors(options, prefix), options);
  const std::filesystem::path root(dir);
  std::map<std::string, std::string> weight_map;
  uint64_t total = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shards.size() == 1
                                 ? std::string("model.safetensors")
                                 : fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    TensorStore store;
    for (const TinyTensor& tensor : shards[s]) add_tensor(store, tensor, options);
    for (const TensorBytes& entry : store.entries) {
      weight_map[entry.name] = file;
      total += entry.bytes.size();
    }
    PLUMB_TRY(write_safetensors(root / file, store.entries, metadata));
  }
  if (shards.size() > 1)
    return write_safetensors_index(root / "model.safetensors.index.json", weight_map, total);
  return {};
}

}  // namespace plumb::gemma4

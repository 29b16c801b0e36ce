// Times the CUDA backend's ops at Gemma 4 12B geometry on random weights: device copy bandwidth (the decode
// bound), the layer matmuls for 1 to 128 rows (bytes moved per second against that bandwidth) and for prompt
// rows (TFLOP/s), bf16 and MLX affine 4-bit, on the tiled kernel and (affine) for up to 32 rows on the decode
// kernel, q/k/v and gate/up as separate and grouped matmuls, and attention for decode and prompt rows. Each
// time is the median of repeats measured with device events after a warm-up; the weights span several layers
// so that the L2 cache holds none of them between uses.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda_bench_common.hpp"
#include "cuda_boundaries.hpp"
#include "ops/affine.hpp"
#include "ops/ops.hpp"
#include "ops/sampling.hpp"

namespace plumb::bench {

namespace {

using cuda::CudaBackend;
using ops::DeviceTensor;
using ops::Weight;

struct BenchWeight {
  Weight weight;
  std::vector<DeviceTensor> storage;
  double bytes = 0;
};

// Attaches the backend's own copy of an affine weight (its decode layout), as the model loader does; none
// where the backend makes none. The weight's bytes stay those of its codes, scales and biases.
void prepare(CudaBackend& backend, BenchWeight& w) {
  auto copy = ops::prepare_weight(backend, w.weight);
  if (!copy) require(copy.error());
  if (copy->has_value()) w.storage.push_back(std::move(**copy));
}

BenchWeight make_weight(CudaBackend& backend, int64_t out, int64_t in, int bits, uint32_t seed) {
  BenchWeight w;
  if (bits == 0) {
    DeviceTensor dense = tensor(backend, DType::bf16, {out, in}, seed, -0.05f, 0.05f);
    w.weight = Weight::make_dense("w", dense.view);
    w.storage = {dense};
  } else {
    const int group = 64;
    DeviceTensor packed = tensor(backend, DType::u32, {out, ops::affine_row_words(in, bits)}, seed);
    DeviceTensor scales = tensor(backend, DType::bf16, {out, in / group}, seed + 1, 0.001f, 0.004f);
    DeviceTensor biases = tensor(backend, DType::bf16, {out, in / group}, seed + 2, -0.03f, -0.01f);
    w.weight = Weight::make_affine("w", in, packed.view, scales.view, biases.view, bits, group);
    w.storage = {packed, scales, biases};
  }
  for (const DeviceTensor& t : w.storage) w.bytes += static_cast<double>(t.view.bytes());
  prepare(backend, w);
  return w;
}

struct Layer {
  std::vector<BenchWeight> weights;  // q, k, v, o, gate, up, down
};

constexpr int64_t kHidden = 3840, kFfn = 15360;

// Times the stack's matmuls at `rows` rows on `backend` (eager and, for decode row counts, as a graph).
void time_matmuls(CudaBackend& backend, std::vector<Layer>& stack, int64_t rows, DeviceTensor& x,
                  DeviceTensor& out, const std::string& label, int layers, double bytes, double params,
                  double bandwidth) {
  const auto run = [&] {
    for (Layer& layer : stack)
      for (BenchWeight& w : layer.weights) {
        TensorView xv = x.view, ov = out.view;
        xv.shape = {rows, w.weight.in};
        ov.shape = {rows, w.weight.out};
        require(ops::matmul(backend, xv, w.weight, ov));
      }
  };
  const double ms = median_ms(backend, run);
  const double replay = rows <= 128 ? graph_ms(backend, run) : ms;
  const double seconds = std::min(ms, replay) * 1e-3;
  fmt::print(
      "matmul {:<28} rows {:>5}: {:8.3f} ms eager, {:8.3f} ms graph for {} layers, {:7.1f} GB/s ({:5.1f}% of "
      "copy), {:7.1f} TFLOP/s\n",
      label, rows, ms, replay, layers, bytes / seconds * 1e-9, 100.0 * bytes / seconds / bandwidth,
      2.0 * params * static_cast<double>(rows) / seconds * 1e-12);
}

// The layer matmuls at each row count on the tiled kernel, and affine ones at up to 32 rows on the decode
// kernel too: reading the packed rows through its ring, and (4-bit) its decode layout.
void bench_matmuls(CudaBackend& backend, CudaBackend& decode, int bits, double bandwidth,
                   std::initializer_list<int64_t> row_counts) {
  const int64_t shapes[7][2] = {{4096, kHidden}, {2048, kHidden}, {2048, kHidden}, {kHidden, 4096},
                                {kFfn, kHidden}, {kFfn, kHidden}, {kHidden, kFfn}};
  const int layers = bits == 0 ? 6 : 16;
  std::vector<Layer> stack(static_cast<size_t>(layers));
  double bytes = 0, params = 0;
  uint32_t seed = 100;
  for (Layer& layer : stack)
    for (const auto& shape : shapes) {
      layer.weights.push_back(make_weight(backend, shape[0], shape[1], bits, seed += 3));
      bytes += layer.weights.back().bytes;
      params += static_cast<double>(shape[0] * shape[1]);
    }
  const std::string label = bits == 0 ? "bf16" : fmt::format("affine {}-bit g64", bits);
  std::vector<Layer> laid = stack;  // the same weights with the decode backend's layouts
  for (Layer& layer : laid)
    for (BenchWeight& w : layer.weights) prepare(decode, w);
  for (int64_t rows : row_counts) {
    DeviceTensor x = tensor(backend, DType::bf16, {rows, kFfn}, 7);
    DeviceTensor out = tensor(backend, DType::bf16, {rows, kFfn}, 8);
    require(backend.synchronize());  // the decode backend's stream reads what this one wrote
    time_matmuls(backend, stack, rows, x, out, label, layers, bytes, params, bandwidth);
    if (rows > 32 || bits == 0) continue;  // the decode kernel takes affine weights only
    time_matmuls(decode, stack, rows, x, out, label + " (decode ring)", layers, bytes, params, bandwidth);
    if (bits == 4)  // the decode layout is made for 4-bit codes
      time_matmuls(decode, laid, rows, x, out, label + " (decode layout)", layers, bytes, params, bandwidth);
  }
}

void bench_attention(CudaBackend& backend, int64_t heads, int64_t kv_heads, int64_t dim, int64_t window,
                     int64_t context, int64_t rows) {
  const int64_t capacity = window > 0 ? ops::kv_capacity(window, rows) : context;
  DeviceTensor keys = tensor(backend, DType::bf16, {capacity, kv_heads, dim}, 21, -0.1f, 0.1f);
  DeviceTensor values = tensor(backend, DType::bf16, {capacity, kv_heads, dim}, 22);
  DeviceTensor q = tensor(backend, DType::bf16, {rows, heads, dim}, 23, -0.1f, 0.1f);
  DeviceTensor out = tensor(backend, DType::bf16, {rows, heads, dim}, 24);
  std::vector<int32_t> positions(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) positions[r] = static_cast<int32_t>(context - rows + r);
  auto p = backend.allocate(DType::i32, {rows});
  if (!p) require(p.error());
  require(backend.upload(TensorView::contiguous(positions.data(), DType::i32, {rows}), p->view));
  const ops::KvSegment segment{0, rows, {keys.view, values.view, context}};
  const auto attend = [&] {
    require(ops::attention(backend, q.view, p->view, {&segment, 1}, {window, 1.0f}, out.view));
  };
  const double ms = median_ms(backend, attend);
  const double replay = rows <= 32 ? graph_ms(backend, attend) : ms;
  fmt::print(
      "attention heads {}/{} dim {} window {:>4} context {:>5} rows {:>5}: {:8.3f} ms eager, {:8.3f} ms "
      "graph\n",
      heads, kv_heads, dim, window, context, rows, ms, replay);
}

// Decode attention of `streams` streams, a row each at position context - 1 of its own cache (as a decode
// step of that many streams runs it: one segment a stream), so the per-row score and values kernels run:
// eager, as a one-launch graph, and a launch's share of a graph of 40 (the cost inside a decode step's
// graph).
void bench_attention_streams(CudaBackend& backend, int64_t heads, int64_t kv_heads, int64_t dim,
                             int64_t window, int64_t context, int64_t streams) {
  const int64_t capacity = window > 0 ? ops::kv_capacity(window, 1) : context;
  std::vector<DeviceTensor> caches;
  std::vector<ops::KvSegment> segments;
  for (int64_t s = 0; s < streams; ++s) {
    caches.push_back(tensor(backend, DType::bf16, {capacity, kv_heads, dim}, 31 + 2 * s, -0.1f, 0.1f));
    caches.push_back(tensor(backend, DType::bf16, {capacity, kv_heads, dim}, 32 + 2 * s));
  }
  for (int64_t s = 0; s < streams; ++s)
    segments.push_back({s, 1, {caches[2 * s].view, caches[2 * s + 1].view, context}});
  DeviceTensor q = tensor(backend, DType::bf16, {streams, heads, dim}, 23, -0.1f, 0.1f);
  DeviceTensor out = tensor(backend, DType::bf16, {streams, heads, dim}, 24);
  std::vector<int32_t> positions(static_cast<size_t>(streams), static_cast<int32_t>(context - 1));
  auto p = backend.allocate(DType::i32, {streams});
  if (!p) require(p.error());
  require(backend.upload(TensorView::contiguous(positions.data(), DType::i32, {streams}), p->view));
  const auto attend = [&] {
    require(ops::attention(backend, q.view, p->view, segments, {window, 1.0f}, out.view));
  };
  constexpr int kChain = 40;  // a 48-layer step's sliding layers: what a launch costs between its neighbours
  const auto chain = [&] {
    for (int i = 0; i < kChain; ++i) attend();
  };
  fmt::print(
      "attention heads {}/{} dim {} window {:>4} context {:>5} streams {:>3}: {:8.3f} ms eager, {:8.3f} ms "
      "graph, {:8.4f} ms a launch in a graph of {}\n",
      heads, kv_heads, dim, window, context, streams, median_ms(backend, attend), graph_ms(backend, attend),
      graph_ms(backend, chain) / kChain, kChain);
}

// The same draws on the host, as the engine made them before the device drew: download the logits, draw
// each row (ops::draw_keyed); the median of 3.
double host_draw_ms(CudaBackend& backend, const TensorView& logits,
                    const std::vector<ops::SampleParams>& params) {
  std::vector<float> values(static_cast<size_t>(logits.elements()));
  const int64_t width = logits.dim(1);
  std::vector<double> times;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    require(backend.download(logits, TensorView::contiguous(values.data(), DType::f32, logits.shape)));
    for (size_t r = 0; r < params.size(); ++r)
      (void)ops::draw_keyed(
          std::span(values).subspan(r * static_cast<size_t>(width), static_cast<size_t>(width)), params[r]);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[1];
}

// The keyed draw over Gemma 4's vocabulary (f32 soft-capped logits in [-30, 30]) at 1 and 32 rows, greedy
// and with the checkpoints' defaults (temperature 1, top-k 64, top-p 0.95), and with no top-k.
void bench_sample(CudaBackend& backend) {
  constexpr int64_t kVocab = 262144;
  struct Setting {
    const char* label;
    ops::SampleParams params;
  };
  const Setting settings[] = {{"greedy", {0.0f, 1.0f, 0.0f, 0, 1, 0}},
                              {"t 1 top-k 64 top-p 0.95", {1.0f, 0.95f, 0.0f, 64, 1, 0}},
                              {"t 1 top-p 0.95", {1.0f, 0.95f, 0.0f, 0, 1, 0}},
                              {"t 1 min-p 0.05", {1.0f, 1.0f, 0.05f, 0, 1, 0}}};
  for (int64_t rows : {1, 32}) {
    DeviceTensor raw = tensor(backend, DType::bf16, {rows, kVocab}, 31, -60.0f, 60.0f);
    DeviceTensor logits = tensor(backend, DType::f32, {rows, kVocab}, 33);
    require(ops::soft_cap(backend, raw.view, 30.0f, logits.view));
    DeviceTensor ids = tensor(backend, DType::i32, {rows}, 32);
    const auto bytes = static_cast<int64_t>(sizeof(ops::SampleParams));
    auto params = backend.allocate(DType::u8, {rows, bytes});
    if (!params) require(params.error());
    for (const Setting& setting : settings) {
      std::vector<ops::SampleParams> host(static_cast<size_t>(rows), setting.params);
      for (int64_t r = 0; r < rows; ++r) host[static_cast<size_t>(r)].position = 1000 + r;
      require(backend.upload(TensorView::contiguous(host.data(), DType::u8, {rows, bytes}), params->view));
      const double ms =
          median_ms(backend, [&] { require(ops::sample(backend, logits.view, params->view, ids.view)); });
      fmt::print("sample {:<26} rows {:>3}: {:8.3f} ms on the device, {:8.3f} ms on the host\n",
                 setting.label, rows, ms, host_draw_ms(backend, logits.view, host));
    }
  }
}

// Per-head norms at 1 row, as a decode step launches them: the q norm with RoPE (16 heads of 256) and the
// k norm (8 heads of 256).
void bench_head_norms(CudaBackend& backend) {
  DeviceTensor weight = tensor(backend, DType::bf16, {256}, 44);
  DeviceTensor q = tensor(backend, DType::bf16, {1, 16, 256}, 45);
  DeviceTensor q_out = tensor(backend, DType::bf16, {1, 16, 256}, 46);
  DeviceTensor k = tensor(backend, DType::bf16, {1, 8, 256}, 47);
  DeviceTensor k_out = tensor(backend, DType::bf16, {1, 8, 256}, 48);
  const int32_t position = 140;
  auto positions = backend.allocate(DType::i32, {1});
  if (!positions) require(positions.error());
  require(backend.upload(TensorView::contiguous(const_cast<int32_t*>(&position), DType::i32, {1}),
                         positions->view));
  const ops::RopeSpec rope{10000.0, 256, 1.0, 1.0};
  const auto norm_rope = [&] {
    require(ops::norm_rope(backend, q.view, &weight.view, 1e-6f, positions->view, rope, q_out.view));
  };
  const auto k_norm = [&] { require(ops::rms_norm(backend, k.view, &weight.view, 1e-6f, k_out.view)); };
  fmt::print("norm_rope 1x16x256: {:8.4f} ms eager, {:8.4f} ms graph\n", median_ms(backend, norm_rope),
             graph_ms(backend, norm_rope));
  fmt::print("rms_norm 1x8x256: {:8.4f} ms eager, {:8.4f} ms graph\n", median_ms(backend, k_norm),
             graph_ms(backend, k_norm));
}

// rms_norm of hidden rows (3840 wide, weighted) at 1, 32 and 128 rows: a launch each, as in the forward.
void bench_norm(CudaBackend& backend) {
  bench_head_norms(backend);
  DeviceTensor weight = tensor(backend, DType::bf16, {kHidden}, 41);
  for (int64_t rows : {1, 32, 128}) {
    DeviceTensor x = tensor(backend, DType::bf16, {rows, kHidden}, 42);
    DeviceTensor out = tensor(backend, DType::bf16, {rows, kHidden}, 43);
    const auto norm = [&] { require(ops::rms_norm(backend, x.view, &weight.view, 1e-6f, out.view)); };
    fmt::print("rms_norm {}x{}: {:8.4f} ms eager, {:8.4f} ms graph\n", rows, kHidden,
               median_ms(backend, norm), graph_ms(backend, norm));
  }
}

// What a decode step pays a launch of its small ops: each op `kChain` times in one graph, every launch
// reading the last one's output (h_out is h, as in the forward), at 1 and 32 rows; the time is the graph's
// over kChain, so launch gaps and the programmatic overlap between neighbours are in it, as in a decode step.
void bench_chains(CudaBackend& backend) {
  constexpr int kChain = 96;  // residual_norm's launches in a 48-layer step
  DeviceTensor post = tensor(backend, DType::bf16, {kHidden}, 51),
               next_weight = tensor(backend, DType::bf16, {kHidden}, 52);
  DeviceTensor weight = tensor(backend, DType::bf16, {256}, 53);
  for (int64_t rows : {1, 32}) {
    DeviceTensor h = tensor(backend, DType::bf16, {rows, kHidden}, 54);
    DeviceTensor o = tensor(backend, DType::bf16, {rows, kHidden}, 55, -0.1f, 0.1f);
    DeviceTensor next = tensor(backend, DType::bf16, {rows, kHidden}, 56);
    const auto residual = [&] {
      for (int i = 0; i < kChain; ++i)
        require(ops::residual_norm(backend, h.view, o.view, post.view, std::nullopt, next_weight.view, 1e-6f,
                                   h.view, next.view));
    };
    fmt::print("chain residual_norm {}x{}: {:8.4f} us a launch in a graph of {}\n", rows, kHidden,
               1e3 * graph_ms(backend, residual) / kChain, kChain);
    // The floor: the least a dependent launch of these rows costs (one elementwise pass, h = h + o).
    const auto adds = [&] {
      for (int i = 0; i < kChain; ++i) require(ops::add(backend, h.view, o.view, h.view));
    };
    fmt::print("chain add {}x{}: {:8.4f} us a launch in a graph of {}\n", rows, kHidden,
               1e3 * graph_ms(backend, adds) / kChain, kChain);
    DeviceTensor q = tensor(backend, DType::bf16, {rows, 16, 256}, 57);
    DeviceTensor k = tensor(backend, DType::bf16, {rows, 8, 256}, 58);
    DeviceTensor v = tensor(backend, DType::bf16, {rows, 8, 256}, 59);
    std::vector<int32_t> positions(static_cast<size_t>(rows), 140);
    auto p = backend.allocate(DType::i32, {rows});
    if (!p) require(p.error());
    require(backend.upload(TensorView::contiguous(positions.data(), DType::i32, {rows}), p->view));
    const ops::RopeSpec rope{10000.0, 256, 1.0, 1.0};
    const auto norms = [&] {
      for (int i = 0; i < kChain / 2; ++i)
        require(ops::head_norms(backend, q.view, weight.view, k.view, weight.view, v.view, p->view, rope,
                                1e-6f, q.view, k.view, v.view));
    };
    fmt::print("chain head_norms {}x(16+8+8)x256: {:8.4f} us a launch in a graph of {}\n", rows,
               1e3 * graph_ms(backend, norms) / (kChain / 2), kChain / 2);
  }
}

// q, k and v, and gate and up, of each layer as separate matmuls and as matmul_group (one launch where the
// backend groups them), at decode row counts, replayed as graphs.
void bench_matmul_groups(CudaBackend& backend, int bits, double bandwidth) {
  const int64_t shapes[5][2] = {
      {4096, kHidden}, {2048, kHidden}, {2048, kHidden}, {kFfn, kHidden}, {kFfn, kHidden}};
  const int layers = bits == 0 ? 6 : 16;
  std::vector<std::vector<BenchWeight>> stack(static_cast<size_t>(layers));
  double bytes = 0;
  uint32_t seed = 500;
  for (auto& layer : stack)
    for (const auto& shape : shapes) {
      layer.push_back(make_weight(backend, shape[0], shape[1], bits, seed += 3));
      bytes += layer.back().bytes;
    }
  const std::string label = bits == 0 ? "bf16" : fmt::format("affine {}-bit g64", bits);
  for (int64_t rows : {1, 8, 32}) {
    DeviceTensor x = tensor(backend, DType::bf16, {rows, kHidden}, 7);
    std::vector<DeviceTensor> outs;
    for (const auto& shape : shapes) outs.push_back(tensor(backend, DType::bf16, {rows, shape[0]}, 8));
    const auto separate = [&] {
      for (auto& layer : stack)
        for (size_t i = 0; i < layer.size(); ++i)
          require(ops::matmul(backend, x.view, layer[i].weight, outs[i].view));
    };
    const auto grouped = [&] {
      for (auto& layer : stack) {
        const ops::MatmulMember qkv[] = {{&layer[0].weight, outs[0].view},
                                         {&layer[1].weight, outs[1].view},
                                         {&layer[2].weight, outs[2].view}};
        const ops::MatmulMember gate_up[] = {{&layer[3].weight, outs[3].view},
                                             {&layer[4].weight, outs[4].view}};
        require(ops::matmul_group(backend, x.view, qkv));
        require(ops::matmul_group(backend, x.view, gate_up));
      }
    };
    for (const auto& [name, run] : {std::pair{"separate", std::function<void()>(separate)},
                                    std::pair{"grouped", std::function<void()>(grouped)}}) {
      const double ms = graph_ms(backend, run);
      fmt::print("matmul_group {:<18} {:<8} rows {:>3}: {:8.3f} ms graph for {} layers, {:5.1f}% of copy\n",
                 label, name, rows, ms, layers, 100.0 * bytes / (ms * 1e-3) / bandwidth);
    }
  }
}

// One 12B weight shape at a time in 4-bit g64 on the decode layout, 16 weights of it launched in turn inside
// a graph at 1 and 8 rows: us a launch and the share of the copy bound, and the line through the five shapes
// (a least-squares fit of us against bytes): what a launch costs whatever its bytes, and the rate of the
// rest.
void bench_matmul_shapes(CudaBackend& decode, double bandwidth) {
  const int64_t shapes[5][2] = {
      {4096, kHidden}, {2048, kHidden}, {kHidden, 4096}, {kFfn, kHidden}, {kHidden, kFfn}};
  const int64_t row_counts[2] = {1, 8};
  constexpr int kWeights = 16;
  LineFit fits[2];  // us a launch against MB, over the shapes
  for (const auto& shape : shapes) {
    std::vector<BenchWeight> weights;
    for (int i = 0; i < kWeights; ++i)
      weights.push_back(make_weight(decode, shape[0], shape[1], 4, 900 + 3 * i));
    const double megabytes = weights[0].bytes * 1e-6;
    for (int r = 0; r < 2; ++r) {
      DeviceTensor x = tensor(decode, DType::bf16, {row_counts[r], shape[1]}, 7);
      DeviceTensor out = tensor(decode, DType::bf16, {row_counts[r], shape[0]}, 8);
      const double us = 1e3 / kWeights * graph_ms(decode, [&] {
                          for (BenchWeight& w : weights)
                            require(ops::matmul(decode, x.view, w.weight, out.view));
                        });
      fmt::print(
          "matmul-shape 4-bit g64 {:>5} x {:<5} rows {}: {:7.2f} us a launch in a graph of {}, {:6.2f} MB, "
          "{:5.1f}% of copy\n",
          shape[0], shape[1], row_counts[r], us, kWeights, megabytes,
          100.0 * megabytes * 1e12 / us / bandwidth);
      fits[r].add(megabytes, us);
    }
  }
  for (int r = 0; r < 2; ++r) {
    const double rate = fits[r].bytes_per_second();
    fmt::print("matmul-shape fit, rows {}: {:.2f} us a launch + bytes at {:.1f} GB/s ({:.1f}% of copy)\n",
               row_counts[r], fits[r].fixed_us(), rate * 1e-9, 100.0 * rate / bandwidth);
  }
}

// Sections to run: all without arguments, else those named (matmul-bf16, matmul-4bit, matmul-group,
// attention, sample, norm, chain); matmul-prompt or attention-prompt alone runs only the prompt rows of the
// bf16 matmuls or attention, attention-decode alone the decode rows of 1 and 32 streams, matmul-shapes alone
// the 4-bit shapes one at a time, boundaries alone the op boundaries as launches and in a persistent kernel.
int run(const std::vector<std::string>& sections) {
  const auto wanted = [&](std::string_view name) {
    return sections.empty() || std::find(sections.begin(), sections.end(), name) != sections.end();
  };
  auto made = CudaBackend::create(0, cuda::CudaOptions{.decode_matmul = false});  // the tiled matmul alone
  if (!made) require(made.error());
  CudaBackend& backend = **made;
  auto decode = CudaBackend::create(0, cuda::CudaOptions{.decode_matmul = true});
  if (!decode) require(decode.error());
  const cuda::DeviceInfo& info = backend.info();
  fmt::print("device {} (compute {}.{}, {} SMs, {:.1f} GiB)\n", info.name, info.major, info.minor,
             info.multiprocessors, static_cast<double>(info.global_bytes) / (1 << 30));
  const double bandwidth = copy_bandwidth(backend);
  fmt::print("device copy: {:.1f} GB/s (bytes read + written)\n", bandwidth * 1e-9);
  const auto all_rows = {int64_t{1},   int64_t{8},    int64_t{16},  int64_t{32},
                         int64_t{128}, int64_t{2048}, int64_t{8192}};
  if (wanted("matmul-bf16")) bench_matmuls(backend, **decode, 0, bandwidth, all_rows);
  if (wanted("matmul-4bit")) bench_matmuls(backend, **decode, 4, bandwidth, all_rows);
  if (wanted("matmul-group"))
    for (int bits : {0, 4}) bench_matmul_groups(**decode, bits, bandwidth);
  // Prompt rows alone (for a profiler's first launches).
  if (sections.size() == 1 && sections[0] == "matmul-prompt")
    bench_matmuls(backend, **decode, 0, bandwidth, {2048});
  if (sections.size() == 1 && sections[0] == "attention-prompt") {
    bench_attention(backend, 16, 8, 256, 1024, 2048, 2048);
    bench_attention(backend, 16, 1, 512, 0, 2048, 2048);
  }
  if (wanted("attention")) {
    for (int64_t rows : {1, 32}) {
      bench_attention(backend, 16, 8, 256, 1024, 140, rows);  // a short decode context, as profiled
      bench_attention(backend, 16, 1, 512, 0, 140, rows);
      bench_attention(backend, 16, 8, 256, 1024, 4096, rows);
      bench_attention(backend, 16, 1, 512, 0, 8192, rows);
    }
    bench_attention(backend, 16, 8, 256, 1024, 2048, 2048);
    bench_attention(backend, 16, 1, 512, 0, 2048, 2048);
  }
  // Decode steps of 1 and 32 streams alone (the per-row kernels), for A/B of those kernels.
  if (sections.size() == 1 && sections[0] == "attention-decode") {
    for (int64_t streams : {1, 32})
      for (int64_t context : {140, 1024}) {
        bench_attention_streams(backend, 16, 8, 256, 1024, context, streams);
        bench_attention_streams(backend, 16, 1, 512, 0, context, streams);
      }
  }
  if (sections.size() == 1 && sections[0] == "matmul-shapes") bench_matmul_shapes(**decode, bandwidth);
  if (sections.size() == 1 && sections[0] == "boundaries") bench_boundaries(backend, bandwidth);
  if (wanted("sample")) bench_sample(backend);
  if (wanted("norm")) bench_norm(backend);
  if (wanted("chain")) bench_chains(backend);
  fmt::print("arena peak {:.2f} GiB\n", static_cast<double>(backend.arena().peak_in_use_bytes()) / (1 << 30));
  return 0;
}

}  // namespace
}  // namespace plumb::bench

int main(int argc, char** argv) {
  return plumb::bench::run(std::vector<std::string>(argv + 1, argv + argc));
}

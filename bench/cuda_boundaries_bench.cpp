// plumb_cuda_bench boundaries: chains of dependent ops run as launches and in one persistent kernel
// (cuda_boundaries.hpp), each with and without L2 asked for the next weights before the wait, so that the
// costs of an op boundary can be told apart before an engine is built on either. Chains of 48 gemv ops of
// one size (five sizes; a line through them gives a fixed cost an op and the rate of the bytes), then 48
// layers shaped like a 12B decode step's eight launches: q/k/v, two one-block ops (standing for head_norms
// and attention), o, one (residual_norm), gate/up, down, one (residual_norm), with bf16 weights of the 4-bit
// g64 layer's bytes and of the bf16 layer's. Before its timing each way runs once from the activations the
// launches started from, and its outputs must equal theirs bit for bit.
#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <ranges>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda/check.hpp"
#include "cuda_bench_common.hpp"
#include "cuda_boundaries.hpp"

namespace plumb::bench {

namespace {

using cuda::CudaBackend;
using ops::DeviceTensor;

constexpr int kChainOps = 48;
constexpr int64_t kHidden = 3840;
constexpr int64_t kPoolRows = 8192;  // the weight pool holds kChainOps gemv ops of 8192 x 3840
constexpr int64_t kMaxVector = 30720;

void check(cudaError_t code, const char* call) {
  require(cuda::cuda_status("bench.boundaries", call, code));
}

// What the chains share: a pool of random weights, the two activation vectors, the ops' table and arrival
// counters for the persistent kernel, and its timeout flag.
struct Chains {
  CudaBackend& backend;
  int grid;
  DeviceTensor pool, activations[2], table, arrivals, failed;
  unsigned epoch = 0;  // persistent runs since the counters were zeroed

  uint16_t* activation(int i) const { return activations[i].view.as<uint16_t>(); }
  int64_t pool_elements() const { return pool.view.elements(); }
};

Chains make_chains(CudaBackend& backend, int grid, int max_ops) {
  const int64_t table_words = max_ops * static_cast<int64_t>(sizeof(ChainOp) / 4);
  static_assert(sizeof(ChainOp) % 4 == 0);
  auto words = [&](int64_t count) {
    auto made = backend.allocate(DType::u32, {count});
    if (!made) require(made.error());
    return *made;
  };
  return Chains{
      backend,
      grid,
      tensor(backend, DType::bf16, {kChainOps * kPoolRows * kHidden}, 61, -0.03f, 0.03f),
      {tensor(backend, DType::bf16, {kMaxVector}, 62), tensor(backend, DType::bf16, {kMaxVector}, 63)},
      words(table_words),
      words(max_ops),
      words(1)};
}

// Ops taking their weights from the pool one after another, from its start again where one would pass its
// end (a reuse gigabytes apart, which L2 does not hold).
class ChainBuilder {
 public:
  explicit ChainBuilder(const Chains& chains) : chains_(chains) {}

  void gemv(int64_t n, int64_t k) {
    if (next_ + n * k > chains_.pool_elements()) next_ = 0;
    ops_.push_back({chains_.pool.view.as<uint16_t>() + next_, kGemvOp, static_cast<int32_t>(n),
                    static_cast<int32_t>(k)});
    next_ += n * k;
    bytes_ += 2.0 * static_cast<double>(n * k);
  }
  void norm(int64_t n) { ops_.push_back({nullptr, kNormOp, static_cast<int32_t>(n), 0}); }

  const std::vector<ChainOp>& ops() const { return ops_; }
  double bytes() const { return bytes_; }

 private:
  const Chains& chains_;
  std::vector<ChainOp> ops_;
  int64_t next_ = 0;
  double bytes_ = 0;
};

std::vector<uint16_t> download_activations(Chains& chains) {
  std::vector<uint16_t> host(2 * kMaxVector);
  for (int i = 0; i < 2; ++i)
    require(chains.backend.download(
        chains.activations[i].view,
        TensorView::contiguous(host.data() + i * kMaxVector, DType::bf16, {kMaxVector})));
  return host;
}

void reset_activations(Chains& chains) {
  for (int i = 0; i < 2; ++i)
    check(fill_bf16(chains.activation(i), kMaxVector, 62 + i, -1.0f, 1.0f, chains.backend.stream()),
          "fill_bf16");
}

// The first activation one bf16 step away from what reset_activations wrote (its lowest bit flipped).
void plant_step(Chains& chains) {
  uint16_t value = 0;
  TensorView first = chains.activations[0].view;
  first.shape = {1};
  first.strides = {1};
  require(chains.backend.download(first, TensorView::contiguous(&value, DType::bf16, {1})));
  value ^= 1u;
  require(chains.backend.upload(TensorView::contiguous(&value, DType::bf16, {1}), first));
}

bool persistent_failed(Chains& chains) {
  uint32_t failed = 0;
  require(chains.backend.download(chains.failed.view, TensorView::contiguous(&failed, DType::u32, {1})));
  return failed != 0;
}

// Loads the chain's table for the persistent kernel and zeroes its counters and timeout flag.
void load_chain(Chains& chains, const std::vector<ChainOp>& ops) {
  CudaBackend& backend = chains.backend;
  const auto words = static_cast<int64_t>(ops.size() * sizeof(ChainOp) / 4);
  TensorView table = chains.table.view;  // the table's first `words`
  table.shape = {words};
  table.strides = {1};
  require(
      backend.upload(TensorView::contiguous(const_cast<ChainOp*>(ops.data()), DType::u32, {words}), table));
  check(cudaMemsetAsync(chains.arrivals.view.data, 0, chains.arrivals.view.bytes(), backend.stream()),
        "cudaMemsetAsync");
  check(cudaMemsetAsync(chains.failed.view.data, 0, 4, backend.stream()), "cudaMemsetAsync");
  chains.epoch = 0;
}

// One way to run a chain: launches or one persistent kernel, each gemv warp asking L2 for prefetch_bytes of
// its weights before it waits, or for none.
struct Way {
  const char* name;
  bool persistent;
  int prefetch_bytes;
};

// 8 KiB a warp is 64 KiB a block: 17 MB of L2 on 264 blocks, about 5 us of the copy rate of an H100.
constexpr Way kWays[] = {{"launches", false, 0},
                         {"launches, L2 ahead", false, 8192},
                         {"persistent", true, 0},
                         {"persistent, L2 ahead", true, 8192}};
constexpr int kWayCount = static_cast<int>(std::size(kWays));

void run_way(Chains& chains, const std::vector<ChainOp>& ops, const Way& way) {
  uint16_t* const activations[2] = {chains.activation(0), chains.activation(1)};
  const int count = static_cast<int>(ops.size());
  if (!way.persistent) {
    check(launch_chain_ops(ops.data(), count, activations, chains.grid, way.prefetch_bytes,
                           chains.backend.stream()),
          "launch_chain_ops");
    return;
  }
  check(launch_chain_persistent(chains.table.view.as<const ChainOp>(), count, activations,
                                chains.arrivals.view.as<unsigned>(), ++chains.epoch,
                                chains.failed.view.as<unsigned>(), chains.grid, way.prefetch_bytes,
                                chains.backend.stream()),
        "cudaLaunchCooperativeKernel");
}

// The loaded chain's outputs from reset activations, run `way` (with `plant`, its first input value one
// bf16 step away).
std::vector<uint16_t> outputs_of(Chains& chains, const std::vector<ChainOp>& ops, const Way& way,
                                 bool plant) {
  reset_activations(chains);
  if (plant) plant_step(chains);
  run_way(chains, ops, way);
  return download_activations(chains);
}

// How many of `way`'s output values differ from `expected` (the first way's, from the same activations),
// printing the first; -1 where a persistent block timed out.
int64_t compare_ways(Chains& chains, const std::vector<ChainOp>& ops, const std::vector<uint16_t>& expected,
                     const std::string& label, const Way& way, bool plant) {
  const std::vector<uint16_t> got = outputs_of(chains, ops, way, plant);
  if (way.persistent && persistent_failed(chains)) {
    fmt::print(
        "boundaries {}, {}: FAILED: a persistent block waited over a second for an op; expected a grid of {} "
        "resident blocks\n",
        label, way.name, chains.grid);
    return -1;
  }
  const auto differ = std::ranges::mismatch(expected, got);
  if (differ.in1 == expected.end()) return 0;
  const auto at = differ.in1 - expected.begin();
  const auto count = std::ranges::count_if(std::views::iota(size_t{0}, expected.size()),
                                           [&](size_t i) { return expected[i] != got[i]; });
  if (plant) {
    fmt::print("boundaries {}, {} (control, an input changed): {} of {} values differ, as they must\n", label,
               way.name, count, expected.size());
    return count;
  }
  fmt::print(
      "boundaries {}, {}: FAILED: activations[{}][{}] {} 0x{:04x}, 0x{:04x}; expected equal bits ({} of {} "
      "values differ)\n",
      label, way.name, at / kMaxVector, at % kMaxVector, kWays[0].name, expected[at], got[at], count,
      expected.size());
  return count;
}

// Each way's us an op over a chain, NaN for a way whose outputs differ from the first way's. With `control`,
// a run of the persistent way from a changed input must be told apart.
std::array<double, kWayCount> time_chain(Chains& chains, const std::vector<ChainOp>& ops,
                                         const std::string& label, bool control) {
  load_chain(chains, ops);
  const double count = static_cast<double>(ops.size());
  const std::vector<uint16_t> expected = outputs_of(chains, ops, kWays[0], false);
  std::array<double, kWayCount> us{};
  for (int w = 0; w < kWayCount; ++w) {
    const Way& way = kWays[w];
    us[w] = std::numeric_limits<double>::quiet_NaN();
    if (w > 0 && compare_ways(chains, ops, expected, label, way, false) != 0) continue;
    const auto run = [&] { run_way(chains, ops, way); };
    const double ms = way.persistent ? median_ms(chains.backend, run) : graph_ms(chains.backend, run);
    if (!way.persistent || !persistent_failed(chains)) us[w] = 1e3 * ms / count;
  }
  if (control && compare_ways(chains, ops, expected, label, kWays[2], true) <= 0)
    fmt::print(
        "boundaries {}: CONTROL MISSED: an input changed before the persistent run gave the same outputs; "
        "expected some to differ\n",
        label);
  return us;
}

double percent_of_copy(double bytes, double us, double bandwidth) {
  return 100.0 * bytes / (us * 1e-6) / bandwidth;
}

// Chains of one gemv size, and the line through them for each way.
void bench_gemv_chains(Chains& chains, double bandwidth) {
  std::array<LineFit, kWayCount> fits;
  for (int64_t rows : {256, 1024, 2048, 4096, 8192}) {
    ChainBuilder chain(chains);
    for (int i = 0; i < kChainOps; ++i) chain.gemv(rows, kHidden);
    const double op_bytes = chain.bytes() / kChainOps;
    const std::string label = fmt::format("gemv {} x {}", rows, kHidden);
    const std::array<double, kWayCount> us = time_chain(chains, chain.ops(), label, rows == 256);
    std::string line =
        fmt::format("boundaries {} ({:.2f} MB), {} ops, us an op:", label, op_bytes * 1e-6, kChainOps);
    for (int w = 0; w < kWayCount; ++w) {
      line += fmt::format(" {} {:.2f} ({:.1f}% of copy){}", kWays[w].name, us[w],
                          percent_of_copy(op_bytes, us[w], bandwidth), w + 1 < kWayCount ? "," : "");
      fits[w].add(op_bytes * 1e-6, us[w]);
    }
    fmt::print("{}\n", line);
  }
  for (int w = 0; w < kWayCount; ++w)
    fmt::print("boundaries fit, {}: {:.2f} us an op + bytes at {:.1f} GB/s ({:.1f}% of copy)\n",
               kWays[w].name, fits[w].fixed_us(), fits[w].bytes_per_second() * 1e-9,
               100.0 * fits[w].bytes_per_second() / bandwidth);
}

// 48 layers of a decode step's eight ops; `bytes_scale` shrinks the gemv rows to the 4-bit layer's bytes.
void bench_layer_chain(Chains& chains, double bandwidth, const char* name, double bytes_scale) {
  const auto rows = [&](int64_t n) { return std::max<int64_t>(8, std::llround(n * bytes_scale / 8) * 8); };
  ChainBuilder chain(chains);
  for (int layer = 0; layer < 48; ++layer) {
    chain.gemv(rows(8192), kHidden);   // q, k and v
    chain.norm(kHidden);               // for head_norms
    chain.norm(kHidden);               // for attention
    chain.gemv(rows(kHidden), 4096);   // o
    chain.norm(kHidden);               // residual_norm
    chain.gemv(rows(30720), kHidden);  // gate and up
    chain.gemv(rows(kHidden), 15360);  // down
    chain.norm(kHidden);               // residual_norm
  }
  const std::string label = fmt::format("layers {}", name);
  const std::array<double, kWayCount> us = time_chain(chains, chain.ops(), label, false);
  const double count = static_cast<double>(chain.ops().size()), bound_ms = chain.bytes() / bandwidth * 1e3;
  std::string line = fmt::format("boundaries {} (48 x 8 ops, {:.2f} GB, bound {:.3f} ms), ms a step:", label,
                                 chain.bytes() * 1e-9, bound_ms);
  for (int w = 0; w < kWayCount; ++w) {
    const double ms = us[w] * count * 1e-3;
    line += fmt::format(" {} {:.3f} ({:.1f}% of the bound){}", kWays[w].name, ms, 100.0 * bound_ms / ms,
                        w + 1 < kWayCount ? "," : "");
  }
  fmt::print("{}\n", line);
}

}  // namespace

void bench_boundaries(CudaBackend& backend, double bandwidth) {
  int per_sm = 0;
  check(chain_blocks_per_sm(&per_sm), "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const int grid = per_sm * backend.info().multiprocessors;
  fmt::print("boundaries: {} blocks ({} an SM) of 256 threads; a gemv op on all of them, a norm op on one\n",
             grid, per_sm);
  Chains chains = make_chains(backend, grid, 48 * 8);
  bench_gemv_chains(chains, bandwidth);
  // 4-bit g64 holds a weight in 0.5625 bytes (codes, and a bf16 scale and bias per 64), bf16 in 2.
  bench_layer_chain(chains, bandwidth, "of 12B 4-bit g64 bytes", 0.5625 / 2.0);
  bench_layer_chain(chains, bandwidth, "of 12B bf16 bytes", 1.0);
}

}  // namespace plumb::bench

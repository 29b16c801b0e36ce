#pragma once
// The CUDA backend: one device, one stream that every op, upload and download is queued on (so memory
// released to the arena is only reused behind its last use), and an arena for all tensors and kernel scratch.
// Launchers cannot return a Status, so the first failed launch is kept, later launches are skipped, and the
// failure is returned by the next synchronize() or download().
#include <memory>
#include <optional>
#include <span>

#include "cuda/arena.hpp"
#include "cuda/device.hpp"
#include "cuda/graphs.hpp"
#include "cuda/op_profile.hpp"
#include "cuda/stream.hpp"
#include "ops/backend.hpp"

namespace plumb::cuda {

struct MatmulArgs;  // kernel_args.hpp
struct RowsArgs;

struct CudaOptions {
  // Up to 32 rows of 2/4/8-bit affine weights through the decode matmul (k_matmul_decode.cu), which makes the
  // tiled kernel's sums in the same order (so no bit changes) with the codes streamed through shared memory;
  // off sends every row count to the tiled kernel (for comparisons). bf16 weights always take the tiled
  // kernel.
  bool decode_matmul = true;

  // 4-bit affine weights get a second copy at load (prepare_weight) in the decode kernel's own layout: each
  // lane's codes, its columns' scales and biases, and each tile's form, contiguous
  // (k_matmul_decode_lanes.cu), so that a tile costs the decode kernel three copies and its dequantization.
  // The same codes, scales and biases, so the same bits; off keeps one copy of the weights (the decode kernel
  // then reads the packed rows). A weight gets no copy where it would leave less than a quarter of the
  // device's memory free.
  bool decode_layout = true;

  // Forwards the model runs under begin_graph/end_graph are recorded as CUDA graphs and replayed unchanged
  // while their arguments are (never while the op profile is on, which times each launch).
  bool graphs = true;

  // The options make_cuda_backend uses: decode_matmul unless PLUMB_CUDA_DECODE_MATMUL is 0, decode_layout
  // unless PLUMB_CUDA_DECODE_LAYOUT is 0, graphs unless PLUMB_CUDA_GRAPHS is 0.
  static CudaOptions from_environment();
};

class CudaBackend final : public ops::Backend {
 public:
  // Selects GPU `device` (refusing one this build has no code for) and creates its stream and arena.
  static Result<std::unique_ptr<CudaBackend>> create(int device = 0, CudaOptions options = {});
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  Device device() const override { return Device{DeviceKind::cuda, info_.index}; }

  Result<ops::DeviceTensor> allocate(DType dtype, Shape shape) override;
  Status upload(const TensorView& host, const TensorView& device_tensor) override;
  Status download(const TensorView& device_tensor, const TensorView& host) override;
  Status copy(const TensorView& from, const TensorView& to) override;
  Status synchronize() override;
  int64_t free_memory_bytes() const override;
  Result<std::optional<ops::DeviceTensor>> prepare_weight(const ops::WeightLaunch& weight) override;
  bool begin_graph(int64_t key) override;
  Status end_graph(bool launch) override;
  bool replay_graph(int64_t key) override;
  bool graphs_enabled() const override { return options_.graphs; }
  bool set_graphs(bool on) override;
  int64_t graph_launches() const override { return graphs_.launches(); }
  int64_t graph_replays() const override { return graphs_.replays(); }

  void embed_rows(const ops::EmbedLaunch& launch) override;
  void rms_norm(const ops::RmsNormLaunch& launch) override;
  void residual_norm(const ops::ResidualNormLaunch& launch) override;
  void norm_rope(const ops::NormRopeLaunch& launch) override;
  void head_norms(const ops::HeadNormsLaunch& launch) override;
  void kv_write(const ops::KvWriteLaunch& launch) override;
  void attention(const ops::AttentionLaunch& launch) override;
  void matmul(const ops::MatmulLaunch& launch) override;
  void matmul_group(const ops::MatmulGroupLaunch& launch) override;
  void matmul_geglu(const ops::MatmulGegluLaunch& launch) override;
  void matmul_head_norms(const ops::MatmulHeadNormsLaunch& launch) override;
  void geglu(const ops::RowsLaunch& launch) override;
  void add(const ops::RowsLaunch& launch) override;
  void scale(const ops::RowsLaunch& launch) override;
  void soft_cap(const ops::RowsLaunch& launch) override;
  void argmax(const ops::ArgmaxLaunch& launch) override;
  void sample(const ops::SampleLaunch& launch) override;

  const DeviceInfo& info() const { return info_; }
  cudaStream_t stream() const { return stream_.get(); }
  const Arena& arena() const { return *arena_; }
  const CudaOptions& options() const { return options_; }

  // Per-op device times (op_profile.hpp): on from now, and the totals since the last call, largest first.
  void enable_profile();
  std::vector<OpTime> take_profile();

 private:
  CudaBackend(DeviceInfo info, Stream stream, CudaOptions options);
  // Records the first failure; returns whether launches may go on.
  bool check_launch(std::string_view op, cudaError_t code);
  // Runs `launch` (returning its cudaError_t) unless an earlier launch failed, in plain stream order for a
  // call of more than kDependentLaunchRows rows; with the profile on, times it under `label()`.
  template <typename Launch, typename Label>
  void run(std::string_view op, int64_t rows, const Launch& launch, const Label& label);
  bool failed() const { return failure_.has_value(); }
  // Device scratch of at least `bytes`, kept between ops and grown when needed; where `bytes` cannot be had,
  // at least `least` (the op's minimum) if that can. scratch_bytes_ then holds what there is.
  void* scratch(std::string_view op, size_t bytes, size_t least = 0);
  // The matmul's split counters (launchers.hpp), allocated and zeroed on first use.
  unsigned* matmul_counters();
  // Matmuls of one x (one for a plain matmul) with their scratch and split counters, as `op`: launch(scratch,
  // counters, decode option, stream) queues them (launch_matmul_group, or an op that fuses its next step).
  template <typename Label, typename Launch>
  void run_matmuls(std::string_view op, std::span<const MatmulArgs> args, const Label& label,
                   const Launch& launch);

  DeviceInfo info_;
  CudaOptions options_;
  Stream stream_;
  std::shared_ptr<Arena> arena_;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  int64_t scratch_generation_ = 0;  // counts the scratch's moves: a graph recorded before one cannot replay
  unsigned* counters_ = nullptr;
  std::optional<Error> failure_;
  std::unique_ptr<OpProfile> profile_;
  GraphCache graphs_;
  std::optional<int64_t> recording_;  // the key of the graph being recorded
  int64_t recording_generation_ = 0;  // the scratch generation when that recording began
};

// The backend as the op set sees it (for factories that choose a backend by name), with the environment's
// options.
Result<std::unique_ptr<ops::Backend>> make_cuda_backend(int device = 0);

}  // namespace plumb::cuda

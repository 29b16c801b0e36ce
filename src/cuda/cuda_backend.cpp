#include "cuda/cuda_backend.hpp"

#include <optional>

#include <fmt/format.h>

#include "cuda/check.hpp"
#include "cuda/launch_args.hpp"
#include "cuda/launch_order.hpp"
#include "cuda/launchers.hpp"
#include "ops/check.hpp"

namespace plumb::cuda {

namespace {

Status check_device(std::string_view where, std::string_view name, const TensorView& view, Device device) {
  if (view.device == device) return {};
  return error_at(where, "tensor", name, "is on the wrong device", device_name(device),
                  device_name(view.device));
}

}  // namespace

CudaOptions CudaOptions::from_environment() {
  CudaOptions options;
  options.decode_matmul = env_switch_on("PLUMB_CUDA_DECODE_MATMUL");
  options.decode_layout = env_switch_on("PLUMB_CUDA_DECODE_LAYOUT");
  options.graphs = env_switch_on("PLUMB_CUDA_GRAPHS");
  return options;
}

CudaBackend::CudaBackend(DeviceInfo info, Stream stream, CudaOptions options)
    : info_(std::move(info)),
      options_(options),
      stream_(std::move(stream)),
      arena_(std::make_shared<Arena>(info_.index)) {}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_.get());
  if (scratch_ != nullptr) arena_->release(scratch_);
  if (counters_ != nullptr) arena_->release(counters_);
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(int device, CudaOptions options) {
  auto info = select_device(device);
  if (!info) return info.error();
  auto stream = Stream::create();
  if (!stream) return stream.error();
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(*info), std::move(*stream), options));
}

Result<std::unique_ptr<ops::Backend>> make_cuda_backend(int device) {
  auto backend = CudaBackend::create(device, CudaOptions::from_environment());
  if (!backend) return backend.error();
  return std::unique_ptr<ops::Backend>(std::move(*backend));
}

Result<ops::DeviceTensor> CudaBackend::allocate(DType dtype, Shape shape) {
  for (int64_t extent : shape)
    if (extent < 0)
      return error_at("cuda.allocate", "shape", shape_string(shape), "has a negative extent", "extents >= 0",
                      std::to_string(extent));
  const size_t bytes = static_cast<size_t>(shape_elements(shape)) * dtype_size(dtype);
  auto pointer = arena_->allocate(bytes);
  if (!pointer) return pointer.error();
  std::shared_ptr<Arena> arena = arena_;
  ops::DeviceTensor tensor{TensorView::contiguous(*pointer, dtype, std::move(shape), device()), nullptr};
  tensor.storage = std::shared_ptr<void>(*pointer, [arena](void* block) { arena->release(block); });
  return tensor;
}

Status CudaBackend::upload(const TensorView& host, const TensorView& device_tensor) {
  constexpr std::string_view where = "cuda.upload";
  PLUMB_TRY(ops::check_copy_pair(where, host, device_tensor));
  PLUMB_TRY(check_device(where, "device_tensor", device_tensor, device()));
  if (host.bytes() == 0) return {};
  PLUMB_CUDA_TRY(where, cudaSetDevice(info_.index));
  PLUMB_CUDA_TRY(where, cudaMemcpyAsync(device_tensor.data, host.data, host.bytes(), cudaMemcpyHostToDevice,
                                        stream_.get()));
  // A copy from pageable memory returns once the host bytes are staged; from page-locked memory it may still
  // be reading them, so wait before the caller reuses its buffer.
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host.data) == cudaSuccess &&
      attributes.type == cudaMemoryTypeHost)
    return stream_.synchronize();
  (void)cudaGetLastError();
  return {};
}

Status CudaBackend::download(const TensorView& device_tensor, const TensorView& host) {
  constexpr std::string_view where = "cuda.download";
  PLUMB_TRY(ops::check_copy_pair(where, device_tensor, host));
  PLUMB_TRY(check_device(where, "device_tensor", device_tensor, device()));
  if (failed()) return *failure_;
  if (host.bytes() > 0) {
    PLUMB_CUDA_TRY(where, cudaSetDevice(info_.index));
    PLUMB_CUDA_TRY(where, cudaMemcpyAsync(host.data, device_tensor.data, host.bytes(), cudaMemcpyDeviceToHost,
                                          stream_.get()));
  }
  return synchronize();
}

Status CudaBackend::copy(const TensorView& from, const TensorView& to) {
  constexpr std::string_view where = "cuda.copy";
  PLUMB_TRY(ops::check_copy_pair(where, from, to));
  PLUMB_TRY(check_device(where, "from", from, device()));
  PLUMB_TRY(check_device(where, "to", to, device()));
  if (from.bytes() == 0 || from.data == to.data) return {};
  PLUMB_CUDA_TRY(where,
                 cudaMemcpyAsync(to.data, from.data, from.bytes(), cudaMemcpyDeviceToDevice, stream_.get()));
  return {};
}

Status CudaBackend::synchronize() {
  if (failed()) {
    Error error = *failure_;
    failure_.reset();
    return error;
  }
  PLUMB_TRY(stream_.synchronize());
  return profile_ != nullptr ? profile_->collect() : Status{};
}

int64_t CudaBackend::free_memory_bytes() const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(info_.index) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(free_bytes + arena_->reserved_bytes() - arena_->in_use_bytes());
}

Result<std::optional<ops::DeviceTensor>> CudaBackend::prepare_weight(const ops::WeightLaunch& weight) {
  constexpr std::string_view where = "cuda.prepare_weight";
  const WeightArgs args = weight_args(weight);
  const int64_t bytes = options_.decode_matmul && options_.decode_layout ? decode_layout_bytes(args) : 0;
  if (bytes == 0) return std::optional<ops::DeviceTensor>{};
  if (failed()) return *failure_;
  // The copy is a speed-up, never a reason to fail a load or to crowd out the caches: none where it would
  // leave less than a quarter of the device free, or cannot be allocated.
  const int64_t free_bytes = free_memory_bytes();
  if (free_bytes >= 0 && free_bytes - bytes < info_.global_bytes / 4)
    return std::optional<ops::DeviceTensor>{};
  auto copy = allocate(DType::u8, {bytes});
  if (!copy.ok()) return std::optional<ops::DeviceTensor>{};
  PLUMB_CUDA_TRY(where, cudaSetDevice(info_.index));
  PLUMB_CUDA_TRY(where, launch_decode_layout(args, copy->view.data, stream_.get()));
  // Kernels read weights before waiting for the kernel ahead of them (dependent_launch.cuh): the copy must be
  // whole before the next launch, as an upload is.
  PLUMB_TRY(stream_.synchronize());
  return std::optional<ops::DeviceTensor>{std::move(*copy)};
}

bool CudaBackend::begin_graph(int64_t key) {
  if (!options_.graphs || profile_ != nullptr || failed() || recording_) return false;
  if (const Status begun = GraphCache::begin(stream_.get()); !begun.ok()) {
    failure_ = begun.error();
    return false;
  }
  recording_ = key;
  recording_generation_ = scratch_generation_;
  return true;
}

Status CudaBackend::end_graph(bool launch) {
  if (!recording_) return {};
  const int64_t key = *recording_;
  recording_.reset();
  // A launch that failed while recording leaves the recording incomplete: dropped, the failure returned.
  const bool complete = launch && !failed();
  // Scratch that moved while recording: the earlier launches point at memory the arena has taken back.
  const int64_t generation = recording_generation_ == scratch_generation_ ? scratch_generation_ : -1;
  const Status ended = graphs_.end(stream_.get(), key, complete, generation);
  if (failed()) return synchronize();
  return ended;
}

bool CudaBackend::replay_graph(int64_t key) {
  if (!options_.graphs || profile_ != nullptr || failed() || recording_) return false;
  auto replayed = graphs_.replay(stream_.get(), key, scratch_generation_);
  if (!replayed) {
    failure_ = replayed.error();
    return false;
  }
  return *replayed;
}

bool CudaBackend::set_graphs(bool on) {
  options_.graphs = on;
  return true;
}

bool CudaBackend::check_launch(std::string_view op, cudaError_t code) {
  if (code == cudaSuccess) return true;
  if (!failed()) {
    (void)cudaGetLastError();
    failure_ = error_at(fmt::format("cuda.{}", op), "call", "kernel launch", "failed", "cudaSuccess",
                        fmt::format("{} ({})", cudaGetErrorName(code), cudaGetErrorString(code)));
  }
  return false;
}

void* CudaBackend::scratch(std::string_view op, size_t bytes, size_t least) {
  if (bytes <= scratch_bytes_) return scratch_;
  ++scratch_generation_;
  if (scratch_ != nullptr) arena_->release(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  auto block = arena_->allocate(bytes);
  if (!block && least > 0 && least < bytes) {  // a smaller scratch only takes more launches
    bytes = least;
    block = arena_->allocate(bytes);
  }
  if (!block) {
    if (!failed())
      failure_ = Error{fmt::format("cuda.{}: scratch of {} bytes: {}", op, bytes, block.error().message)};
    return nullptr;
  }
  scratch_ = *block;
  scratch_bytes_ = bytes;
  return scratch_;
}

unsigned* CudaBackend::matmul_counters() {
  if (counters_ != nullptr) return counters_;
  const size_t bytes = kMatmulCounters * sizeof(unsigned);
  auto block = arena_->allocate(bytes);
  if (!block) {
    if (!failed()) failure_ = Error{fmt::format("cuda.matmul: split counters: {}", block.error().message)};
    return nullptr;
  }
  if (!check_launch("matmul", cudaMemsetAsync(*block, 0, bytes, stream_.get()))) {
    arena_->release(*block);
    return nullptr;
  }
  counters_ = static_cast<unsigned*>(*block);
  return counters_;
}

template <typename Launch, typename Label>
void CudaBackend::run(std::string_view op, int64_t rows, const Launch& launch, const Label& label) {
  if (failed()) return;
  const PlainLaunchScope plain(rows > kDependentLaunchRows);
  if (profile_ == nullptr) {
    check_launch(op, launch());
    return;
  }
  profile_->begin(stream_.get());
  const bool launched = check_launch(op, launch());
  if (launched) profile_->end(label(), stream_.get());
}

void CudaBackend::enable_profile() {
  if (profile_ == nullptr) profile_ = std::make_unique<OpProfile>();
}

std::vector<OpTime> CudaBackend::take_profile() {
  if (profile_ == nullptr) return {};
  if (stream_.synchronize().ok()) (void)profile_->collect();
  return profile_->take();
}

namespace {

std::string rows_label(std::string_view op, int64_t rows, int64_t width) {
  return fmt::format("{} {}x{}", op, rows, width);
}

std::string weight_label(const ops::WeightLaunch& w) {
  const std::string format = w.affine ? fmt::format("{}-bit g{}", w.bits, w.group) : std::string("dense");
  return fmt::format("{} {}x{}", format, w.out, w.in);
}

}  // namespace

void CudaBackend::embed_rows(const ops::EmbedLaunch& launch) {
  run(
      "embed_rows", launch.rows, [&] { return launch_embed_rows(embed_args(launch), stream_.get()); },
      [&] { return rows_label("embed_rows", launch.rows, launch.table.in); });
}
void CudaBackend::rms_norm(const ops::RmsNormLaunch& launch) {
  run(
      "rms_norm", launch.rows, [&] { return launch_rms_norm(norm_args(launch), stream_.get()); },
      [&] { return rows_label("rms_norm", launch.rows * launch.heads, launch.dim); });
}
void CudaBackend::residual_norm(const ops::ResidualNormLaunch& launch) {
  if (!residual_norm_fused(launch.post.dim)) return ops::Backend::residual_norm(launch);  // four launches
  run(
      "residual_norm", launch.post.rows,
      [&] { return launch_residual_norm(residual_norm_args(launch), stream_.get()); },
      [&] { return rows_label("residual_norm", launch.post.rows, launch.post.dim); });
}
void CudaBackend::norm_rope(const ops::NormRopeLaunch& launch) {
  run(
      "norm_rope", launch.norm.rows, [&] { return launch_norm_rope(norm_rope_args(launch), stream_.get()); },
      [&] { return rows_label("norm_rope", launch.norm.rows * launch.norm.heads, launch.norm.dim); });
}
void CudaBackend::head_norms(const ops::HeadNormsLaunch& launch) {
  std::vector<KvWriteSegmentArgs> segments;
  std::optional<KvWriteArgs> cache;
  if (launch.cache != nullptr) cache = kv_write_args(*launch.cache, segments);
  run(
      "head_norms", launch.q.norm.rows,
      [&] { return launch_head_norms(head_norms_args(launch), cache ? &*cache : nullptr, stream_.get()); },
      [&] {
        return fmt::format("head_norms {}x({}+{})x{}{}", launch.q.norm.rows, launch.q.norm.heads,
                           launch.k.norm.heads, launch.q.norm.dim,
                           cache ? fmt::format(" into {} caches", cache->segment_count) : "");
      });
}
void CudaBackend::kv_write(const ops::KvWriteLaunch& launch) {
  std::vector<KvWriteSegmentArgs> segments;
  const KvWriteArgs args = kv_write_args(launch, segments);
  run(
      "kv_write", launch.rows, [&] { return launch_kv_write(args, stream_.get()); },
      [&] {
        return fmt::format("kv_write {}x{} in {} caches", launch.rows, launch.kv_heads * launch.head_dim,
                           launch.segment_count);
      });
}
void CudaBackend::geglu(const ops::RowsLaunch& launch) {
  run(
      "geglu", launch.rows, [&] { return launch_geglu(rows_args(launch), stream_.get()); },
      [&] { return rows_label("geglu", launch.rows, launch.width); });
}
void CudaBackend::add(const ops::RowsLaunch& launch) {
  run(
      "add", launch.rows, [&] { return launch_add(rows_args(launch), stream_.get()); },
      [&] { return rows_label("add", launch.rows, launch.width); });
}
void CudaBackend::scale(const ops::RowsLaunch& launch) {
  run(
      "scale", launch.rows, [&] { return launch_scale(rows_args(launch), stream_.get()); },
      [&] { return rows_label("scale", launch.rows, launch.width); });
}
void CudaBackend::soft_cap(const ops::RowsLaunch& launch) {
  run(
      "soft_cap", launch.rows, [&] { return launch_soft_cap(rows_args(launch), stream_.get()); },
      [&] { return rows_label("soft_cap", launch.rows, launch.width); });
}
void CudaBackend::argmax(const ops::ArgmaxLaunch& launch) {
  run(
      "argmax", launch.rows, [&] { return launch_argmax(argmax_args(launch), stream_.get()); },
      [&] { return rows_label("argmax", launch.rows, launch.width); });
}
void CudaBackend::sample(const ops::SampleLaunch& launch) {
  if (failed()) return;
  SampleArgs args = sample_args(launch);
  void* area = scratch("sample", sample_scratch_bytes(args));
  if (area == nullptr) return;
  args.weights = static_cast<uint64_t*>(area);
  args.summaries = reinterpret_cast<SampleRowSummary*>(args.weights + args.rows * args.width);
  run(
      "sample", launch.rows, [&] { return launch_sample(args, info_.major >= 9, stream_.get()); },
      [&] { return rows_label("sample", launch.rows, launch.width); });
}

template <typename Label, typename Launch>
void CudaBackend::run_matmuls(std::string_view op, std::span<const MatmulArgs> args, const Label& label,
                              const Launch& launch) {
  if (failed()) return;
  const size_t bytes = matmul_group_scratch_bytes(args);
  void* area = bytes > 0 ? scratch(op, bytes) : nullptr;
  if (bytes > 0 && area == nullptr) return;
  unsigned* counters = matmul_counters();
  if (counters == nullptr) return;
  run(
      op, args.front().rows, [&] { return launch(area, counters, options_.decode_matmul, stream_.get()); },
      label);
}

namespace {

// launch_matmul_group as run_matmuls launches it.
cudaError_t group_launch(std::span<const MatmulArgs> args, void* area, unsigned* counters, bool decode,
                         cudaStream_t stream) {
  return launch_matmul_group(args, area, counters, decode, stream);
}

std::vector<MatmulArgs> group_args(const ops::MatmulGroupLaunch& launch) {
  static_assert(ops::kMatmulGroupMembers == kMatmulGroupMembers);
  std::vector<MatmulArgs> args;
  for (const ops::MatmulLaunch& member : launch.members) args.push_back(matmul_args(member));
  return args;
}

std::string group_label(std::string_view op, const ops::MatmulGroupLaunch& launch) {
  std::string label = fmt::format("{} rows {}:", op, launch.members.front().rows);
  for (const ops::MatmulLaunch& member : launch.members) label += " " + weight_label(member.weight);
  return label;
}

}  // namespace

void CudaBackend::matmul(const ops::MatmulLaunch& launch) {
  const MatmulArgs args = matmul_args(launch);
  run_matmuls(
      "matmul", std::span(&args, 1),
      [&] { return fmt::format("matmul {} rows {}", weight_label(launch.weight), launch.rows); },
      [&](auto... queue) { return group_launch(std::span(&args, 1), queue...); });
}

void CudaBackend::matmul_group(const ops::MatmulGroupLaunch& launch) {
  const std::vector<MatmulArgs> args = group_args(launch);
  run_matmuls(
      "matmul_group", args, [&] { return group_label("matmul_group", launch); },
      [&](auto... queue) { return group_launch(args, queue...); });
}

void CudaBackend::matmul_geglu(const ops::MatmulGegluLaunch& launch) {
  const MatmulArgs args[] = {matmul_args(launch.gate), matmul_args(launch.up)};
  const RowsArgs geglu = rows_args(launch.geglu);
  run_matmuls(
      "matmul_geglu", args,
      [&] {
        return fmt::format("matmul_geglu rows {}: {} {}", launch.gate.rows, weight_label(launch.gate.weight),
                           weight_label(launch.up.weight));
      },
      [&](auto... queue) { return launch_matmul_geglu(args, geglu, queue...); });
}

void CudaBackend::matmul_head_norms(const ops::MatmulHeadNormsLaunch& launch) {
  const std::vector<MatmulArgs> args = group_args(launch.group);
  std::vector<KvWriteSegmentArgs> segments;
  std::optional<KvWriteArgs> cache;
  if (launch.norms.cache != nullptr) cache = kv_write_args(*launch.norms.cache, segments);
  const HeadNormsArgs norms = head_norms_args(launch.norms);
  run_matmuls(
      "matmul_head_norms", args, [&] { return group_label("matmul_head_norms", launch.group); },
      [&](auto... queue) {
        return launch_matmul_head_norms(args, norms, cache ? &*cache : nullptr, queue...);
      });
}

void CudaBackend::attention(const ops::AttentionLaunch& launch) {
  if (failed() || launch.rows == 0) return;
  std::vector<AttentionSegmentArgs> segments;
  const AttentionArgs args = attention_args(launch, segments);
  void* area = scratch("attention", attention_scratch_bytes(args), attention_scratch_minimum(args));
  if (area == nullptr) return;
  const size_t bytes = scratch_bytes_;
  run(
      "attention", launch.rows, [&] { return launch_attention(args, area, bytes, stream_.get()); },
      [&] {
        return fmt::format("attention {} {}/{} heads x {} rows {}", launch.window > 0 ? "sliding" : "global",
                           launch.heads, launch.kv_heads, launch.head_dim, launch.rows);
      });
}

}  // namespace plumb::cuda

// The CPU backend: host memory, and each typed launcher runs its kernel on the pool, synchronously.
#include "cpu/cpu_backend.hpp"

#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "cpu/kernels.hpp"
#include "cpu/thread_pool.hpp"
#include "ops/check.hpp"

namespace plumb::cpu {

namespace {

class CpuBackend final : public ops::Backend {
 public:
  explicit CpuBackend(int threads) : pool_(threads) {}

  std::string_view name() const override { return "cpu"; }
  Device device() const override { return Device{DeviceKind::cpu, 0}; }

  Result<ops::DeviceTensor> allocate(DType dtype, Shape shape) override {
    for (int64_t extent : shape)
      if (extent < 0)
        return error_at("cpu.allocate", "shape", shape_string(shape), "has a negative extent", "extents >= 0",
                        std::to_string(extent));
    auto buffer = std::make_shared<Buffer>(static_cast<size_t>(shape_elements(shape)) * dtype_size(dtype));
    ops::DeviceTensor tensor{TensorView::contiguous(buffer->data(), dtype, std::move(shape)), nullptr};
    tensor.storage = std::move(buffer);
    return tensor;
  }
  Status upload(const TensorView& host, const TensorView& device_tensor) override {
    return copy_bytes("cpu.upload", host, device_tensor);
  }
  Status download(const TensorView& device_tensor, const TensorView& host) override {
    return copy_bytes("cpu.download", device_tensor, host);
  }
  Status copy(const TensorView& from, const TensorView& to) override {
    return copy_bytes("cpu.copy", from, to);
  }
  Status synchronize() override { return {}; }

  void embed_rows(const ops::EmbedLaunch& launch) override { cpu::embed_rows(pool_, launch); }
  void rms_norm(const ops::RmsNormLaunch& launch) override { cpu::rms_norm(pool_, launch); }
  void norm_rope(const ops::NormRopeLaunch& launch) override { cpu::norm_rope(pool_, launch); }
  void kv_write(const ops::KvWriteLaunch& launch) override { cpu::kv_write(pool_, launch); }
  void attention(const ops::AttentionLaunch& launch) override { cpu::attention(pool_, launch); }
  void matmul(const ops::MatmulLaunch& launch) override { cpu::matmul(pool_, launch); }
  void geglu(const ops::RowsLaunch& launch) override { cpu::geglu(pool_, launch); }
  void add(const ops::RowsLaunch& launch) override { cpu::add(pool_, launch); }
  void scale(const ops::RowsLaunch& launch) override { cpu::scale(pool_, launch); }
  void soft_cap(const ops::RowsLaunch& launch) override { cpu::soft_cap(pool_, launch); }
  void argmax(const ops::ArgmaxLaunch& launch) override { cpu::argmax(pool_, launch); }
  void sample(const ops::SampleLaunch& launch) override { cpu::sample(pool_, launch); }

 private:
  static Status copy_bytes(std::string_view where, const TensorView& from, const TensorView& to) {
    PLUMB_TRY(ops::check_copy_pair(where, from, to));
    if (from.bytes() > 0 && from.data != to.data) std::memmove(to.data, from.data, from.bytes());
    return {};
  }

  ThreadPool pool_;
};

}  // namespace

std::unique_ptr<ops::Backend> make_cpu_backend(int threads) {
  const int count =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::make_unique<CpuBackend>(count);
}

}  // namespace plumb::cpu

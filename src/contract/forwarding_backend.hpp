#pragma once
// A backend that forwards every call to a real one. A control derives from it and overrides the one typed
// launcher it plants a fault in, so the op entry, the memory and every other launcher stay the real ones.
#include "ops/backend.hpp"

namespace plumb::contract {

class ForwardingBackend : public ops::Backend {
 public:
  explicit ForwardingBackend(ops::Backend& real) : real_(real) {}

  std::string_view name() const override { return real_.name(); }
  Device device() const override { return real_.device(); }
  Result<ops::DeviceTensor> allocate(DType dtype, Shape shape) override {
    return real_.allocate(dtype, std::move(shape));
  }
  Status upload(const TensorView& host, const TensorView& device_tensor) override {
    return real_.upload(host, device_tensor);
  }
  Status download(const TensorView& device_tensor, const TensorView& host) override {
    return real_.download(device_tensor, host);
  }
  Status copy(const TensorView& from, const TensorView& to) override { return real_.copy(from, to); }
  Status synchronize() override { return real_.synchronize(); }
  Result<std::optional<ops::DeviceTensor>> prepare_weight(const ops::WeightLaunch& weight) override {
    return real_.prepare_weight(weight);
  }

  void embed_rows(const ops::EmbedLaunch& launch) override { real_.embed_rows(launch); }
  void rms_norm(const ops::RmsNormLaunch& launch) override { real_.rms_norm(launch); }
  void norm_rope(const ops::NormRopeLaunch& launch) override { real_.norm_rope(launch); }
  void residual_norm(const ops::ResidualNormLaunch& launch) override { real_.residual_norm(launch); }
  void head_norms(const ops::HeadNormsLaunch& launch) override { real_.head_norms(launch); }
  void kv_write(const ops::KvWriteLaunch& launch) override { real_.kv_write(launch); }
  void attention(const ops::AttentionLaunch& launch) override { real_.attention(launch); }
  void matmul(const ops::MatmulLaunch& launch) override { real_.matmul(launch); }
  void matmul_group(const ops::MatmulGroupLaunch& launch) override { real_.matmul_group(launch); }
  void matmul_geglu(const ops::MatmulGegluLaunch& launch) override { real_.matmul_geglu(launch); }
  void matmul_head_norms(const ops::MatmulHeadNormsLaunch& launch) override {
    real_.matmul_head_norms(launch);
  }
  void geglu(const ops::RowsLaunch& launch) override { real_.geglu(launch); }
  void add(const ops::RowsLaunch& launch) override { real_.add(launch); }
  void scale(const ops::RowsLaunch& launch) override { real_.scale(launch); }
  void soft_cap(const ops::RowsLaunch& launch) override { real_.soft_cap(launch); }
  void argmax(const ops::ArgmaxLaunch& launch) override { real_.argmax(launch); }
  void sample(const ops::SampleLaunch& launch) override { real_.sample(launch); }

 protected:
  ops::Backend& real() { return real_; }

 private:
  ops::Backend& real_;
};

}  // namespace plumb::contract

#pragma once
// A backend with graphs as CUDA has them, over another backend (the CPU one, so CI runs it): between
// begin_graph and end_graph each launch's arguments are copied (with the host arrays they point to) and
// nothing runs; the recording runs at end_graph(true) and again, with the arguments it was given then, at
// every replay_graph. A forward that replays a recording whose arguments no longer fit (a cache that moved,
// other rows) computes something else than one launched op by op, which the replay tests catch.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "ops/backend.hpp"

namespace plumb::gemma4::testing {

class RecordingBackend final : public ops::Backend {
 public:
  explicit RecordingBackend(std::unique_ptr<ops::Backend> inner) : inner_(std::move(inner)) {}

  std::string_view name() const override { return inner_->name(); }
  Device device() const override { return inner_->device(); }
  Result<ops::DeviceTensor> allocate(DType dtype, Shape shape) override {
    return inner_->allocate(dtype, shape);
  }
  Status upload(const TensorView& host, const TensorView& device_tensor) override {
    PLUMB_TRY(not_recording("upload"));
    return inner_->upload(host, device_tensor);
  }
  Status download(const TensorView& device_tensor, const TensorView& host) override {
    PLUMB_TRY(not_recording("download"));
    return inner_->download(device_tensor, host);
  }
  Status copy(const TensorView& from, const TensorView& to) override {
    PLUMB_TRY(not_recording("copy"));
    return inner_->copy(from, to);
  }
  Status synchronize() override { return inner_->synchronize(); }

  bool begin_graph(int64_t key) override {
    if (!enabled_ || recording_) return false;
    recording_ = key;
    pending_.clear();
    return true;
  }
  Status end_graph(bool launch) override {
    if (!recording_) return {};
    const int64_t key = *recording_;
    recording_.reset();
    if (!launch) return {};
    kept_[key] = std::move(pending_);
    run(kept_[key]);
    return {};
  }
  bool replay_graph(int64_t key) override {
    auto found = kept_.find(key);
    if (!enabled_ || recording_ || found == kept_.end()) return false;
    run(found->second);
    ++replays_;
    return true;
  }
  bool graphs_enabled() const override { return enabled_; }
  bool set_graphs(bool on) override {
    enabled_ = on;
    return true;
  }
  int64_t graph_launches() const override { return launches_; }
  int64_t graph_replays() const override { return replays_; }

  void embed_rows(const ops::EmbedLaunch& l) override {
    submit([this, l] { inner_->embed_rows(l); });
  }
  void rms_norm(const ops::RmsNormLaunch& l) override {
    submit([this, l] { inner_->rms_norm(l); });
  }
  void norm_rope(const ops::NormRopeLaunch& l) override {
    std::vector<float> inv_freq(l.inv_freq, l.inv_freq + l.norm.dim / 2);
    submit([this, l, inv_freq] {
      ops::NormRopeLaunch copy = l;
      copy.inv_freq = inv_freq.data();
      inner_->norm_rope(copy);
    });
  }
  void kv_write(const ops::KvWriteLaunch& l) override {
    std::vector<ops::KvWriteSegmentLaunch> segments(l.segments, l.segments + l.segment_count);
    submit([this, l, segments] {
      ops::KvWriteLaunch copy = l;
      copy.segments = segments.data();
      inner_->kv_write(copy);
    });
  }
  void attention(const ops::AttentionLaunch& l) override {
    std::vector<ops::AttentionSegmentLaunch> segments(l.segments, l.segments + l.segment_count);
    submit([this, l, segments] {
      ops::AttentionLaunch copy = l;
      copy.segments = segments.data();
      inner_->attention(copy);
    });
  }
  void matmul(const ops::MatmulLaunch& l) override {
    submit([this, l] { inner_->matmul(l); });
  }
  void geglu(const ops::RowsLaunch& l) override {
    submit([this, l] { inner_->geglu(l); });
  }
  void add(const ops::RowsLaunch& l) override {
    submit([this, l] { inner_->add(l); });
  }
  void scale(const ops::RowsLaunch& l) override {
    submit([this, l] { inner_->scale(l); });
  }
  void soft_cap(const ops::RowsLaunch& l) override {
    submit([this, l] { inner_->soft_cap(l); });
  }
  void argmax(const ops::ArgmaxLaunch& l) override {
    submit([this, l] { inner_->argmax(l); });
  }
  void sample(const ops::SampleLaunch& l) override {
    submit([this, l] { inner_->sample(l); });
  }

 private:
  using Launch = std::function<void()>;

  Status not_recording(std::string_view what) const {
    if (!recording_) return {};
    return error_at("testing.recording_backend", "call", what, "waits on the device while recording",
                    "no upload, download or copy between begin_graph and end_graph", "one");
  }
  void submit(Launch launch) {
    if (recording_)
      pending_.push_back(std::move(launch));
    else
      launch();
  }
  void run(const std::vector<Launch>& launches) {
    for (const Launch& launch : launches) launch();
    ++launches_;
  }

  std::unique_ptr<ops::Backend> inner_;
  bool enabled_ = true;
  std::optional<int64_t> recording_;
  std::vector<Launch> pending_;
  std::map<int64_t, std::vector<Launch>> kept_;
  int64_t launches_ = 0;
  int64_t replays_ = 0;
};

}  // namespace plumb::gemma4::testing

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
#include <type_traits>
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

  void embed_rows(const ops::EmbedLaunch& l) override { submit_copy(l, &ops::Backend::embed_rows); }
  void rms_norm(const ops::RmsNormLaunch& l) override { submit_copy(l, &ops::Backend::rms_norm); }
  void norm_rope(const ops::NormRopeLaunch& l) override {
    std::vector<float> inv_freq(l.inv_freq, l.inv_freq + l.norm.dim / 2);
    submit([this, l, inv_freq] {
      ops::NormRopeLaunch copy = l;
      copy.inv_freq = inv_freq.data();
      inner_->norm_rope(copy);
    });
  }
  void kv_write(const ops::KvWriteLaunch& l) override { submit_with_segments(l, &ops::Backend::kv_write); }
  void attention(const ops::AttentionLaunch& l) override {
    submit_with_segments(l, &ops::Backend::attention);
  }
  void matmul(const ops::MatmulLaunch& l) override { submit_copy(l, &ops::Backend::matmul); }
  void geglu(const ops::RowsLaunch& l) override { submit_copy(l, &ops::Backend::geglu); }
  void add(const ops::RowsLaunch& l) override { submit_copy(l, &ops::Backend::add); }
  void scale(const ops::RowsLaunch& l) override { submit_copy(l, &ops::Backend::scale); }
  void soft_cap(const ops::RowsLaunch& l) override { submit_copy(l, &ops::Backend::soft_cap); }
  void argmax(const ops::ArgmaxLaunch& l) override { submit_copy(l, &ops::Backend::argmax); }
  void sample(const ops::SampleLaunch& l) override { submit_copy(l, &ops::Backend::sample); }

 private:
  using Recorded = std::function<void()>;

  Status not_recording(std::string_view what) const {
    if (!recording_) return {};
    return error_at("testing.recording_backend", "call", what, "waits on the device while recording",
                    "no upload, download or copy between begin_graph and end_graph", "one");
  }
  void submit(Recorded launch) {
    if (recording_)
      pending_.push_back(std::move(launch));
    else
      launch();
  }
  template <class LaunchArgs>
  void submit_copy(const LaunchArgs& l, void (ops::Backend::*op)(const LaunchArgs&)) {
    submit([this, l, op] { (inner_.get()->*op)(l); });
  }
  // A launch whose segment table is a host array: the table is copied with it.
  template <class SegmentedLaunch>
  void submit_with_segments(const SegmentedLaunch& l, void (ops::Backend::*op)(const SegmentedLaunch&)) {
    using Segment = std::remove_cvref_t<decltype(*l.segments)>;
    std::vector<Segment> segments(l.segments, l.segments + l.segment_count);
    submit([this, l, segments, op] {
      SegmentedLaunch copy = l;
      copy.segments = segments.data();
      (inner_.get()->*op)(copy);
    });
  }
  void run(const std::vector<Recorded>& launches) {
    for (const Recorded& launch : launches) launch();
    ++launches_;
  }

  std::unique_ptr<ops::Backend> inner_;
  bool enabled_ = true;
  std::optional<int64_t> recording_;
  std::vector<Recorded> pending_;
  std::map<int64_t, std::vector<Recorded>> kept_;
  int64_t launches_ = 0;
  int64_t replays_ = 0;
};

}  // namespace plumb::gemma4::testing

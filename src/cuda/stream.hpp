#pragma once
// Owning wrappers for a CUDA stream and event; creation failures are Status values, destruction is unchecked
// (nothing useful can be done with a failure there).
#include <utility>

#include <cuda_runtime.h>

#include "core/error.hpp"

namespace plumb::cuda {

class Stream {
 public:
  static Result<Stream> create();
  Stream() = default;
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  cudaStream_t get() const { return stream_; }
  Status synchronize() const;

 private:
  explicit Stream(cudaStream_t stream) : stream_(stream) {}
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  static Result<Event> create();
  Event() = default;
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  cudaEvent_t get() const { return event_; }
  Status record(cudaStream_t stream) const;
  Status synchronize() const;
  // Milliseconds between two recorded events (both must have completed).
  static Result<float> elapsed_ms(const Event& start, const Event& stop);

 private:
  explicit Event(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_ = nullptr;
};

}  // namespace plumb::cuda

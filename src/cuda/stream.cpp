#include "cuda/stream.hpp"

#include "cuda/check.hpp"

namespace plumb::cuda {

Result<Stream> Stream::create() {
  cudaStream_t stream = nullptr;
  PLUMB_CUDA_TRY("cuda.stream", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream(stream);
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status Stream::synchronize() const {
  return cuda_status("cuda.stream", "cudaStreamSynchronize", cudaStreamSynchronize(stream_));
}

Result<Event> Event::create() {
  cudaEvent_t event = nullptr;
  PLUMB_CUDA_TRY("cuda.event", cudaEventCreate(&event));
  return Event(event);
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

Status Event::record(cudaStream_t stream) const {
  return cuda_status("cuda.event", "cudaEventRecord", cudaEventRecord(event_, stream));
}

Status Event::synchronize() const {
  return cuda_status("cuda.event", "cudaEventSynchronize", cudaEventSynchronize(event_));
}

Result<float> Event::elapsed_ms(const Event& start, const Event& stop) {
  float milliseconds = 0.0f;
  PLUMB_CUDA_TRY("cuda.event", cudaEventElapsedTime(&milliseconds, start.event_, stop.event_));
  return milliseconds;
}

}  // namespace plumb::cuda

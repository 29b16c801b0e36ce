#include "cuda/arena.hpp"

#include <algorithm>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cuda/check.hpp"

namespace plumb::cuda {

namespace {

size_t round_up(size_t bytes, size_t to) {
  return (std::max<size_t>(bytes, 1) + to - 1) / to * to;
}

}  // namespace

Arena::~Arena() {
  cudaSetDevice(device_);
  for (const Chunk& chunk : chunks_)
    if (chunk.base != nullptr) cudaFree(chunk.base);
}

Result<size_t> Arena::add_chunk(size_t bytes, bool dedicated) {
  void* base = nullptr;
  PLUMB_CUDA_TRY("cuda.arena", cudaSetDevice(device_));
  const cudaError_t code = cudaMalloc(&base, bytes);
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    return error_at(
        "cuda.arena", "call", "cudaMalloc", "failed",
        fmt::format("{} more bytes (arena holds {} in use, {} reserved)", bytes, in_use_, reserved_),
        fmt::format("{} with {} of {} bytes free on the device", cudaGetErrorName(code), free_bytes,
                    total_bytes));
  }
  // Reuse an emptied slot so chunk indices held by blocks stay valid.
  size_t index = chunks_.size();
  for (size_t i = 0; i < chunks_.size(); ++i)
    if (chunks_[i].base == nullptr) index = i;
  if (index == chunks_.size()) chunks_.emplace_back();
  chunks_[index] = Chunk{static_cast<char*>(base), bytes, dedicated};
  reserved_ += bytes;
  return index;
}

Result<void*> Arena::allocate(size_t bytes) {
  const size_t size = round_up(bytes, kAlignment);
  std::lock_guard lock(mutex_);
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->second.bytes >= size && (best == free_.end() || it->second.bytes < best->second.bytes)) best = it;
  if (best == free_.end()) {
    const bool dedicated = size > chunk_bytes_ / 2;
    auto chunk = add_chunk(dedicated ? size : chunk_bytes_, dedicated);
    if (!chunk) return chunk.error();
    best = free_.emplace(chunks_[*chunk].base, Block{chunks_[*chunk].bytes, *chunk}).first;
  }
  char* at = best->first;
  const Block block = best->second;
  free_.erase(best);
  if (block.bytes > size) free_.emplace(at + size, Block{block.bytes - size, block.chunk});
  used_.emplace(at, Block{size, block.chunk});
  in_use_ += size;
  peak_in_use_ = std::max(peak_in_use_, in_use_);
  return static_cast<void*>(at);
}

void Arena::insert_free(char* at, Block block) {
  auto next = free_.lower_bound(at);
  if (next != free_.end() && next->second.chunk == block.chunk && at + block.bytes == next->first) {
    block.bytes += next->second.bytes;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->second.chunk == block.chunk && previous->first + previous->second.bytes == at) {
      previous->second.bytes += block.bytes;
      return;
    }
  }
  free_.emplace(at, block);
}

void Arena::drop_chunk_if_idle(size_t chunk) {
  Chunk& owner = chunks_[chunk];
  auto it = free_.find(owner.base);
  if (!owner.dedicated || it == free_.end() || it->second.bytes != owner.bytes) return;
  free_.erase(it);
  cudaSetDevice(device_);
  cudaFree(owner.base);
  reserved_ -= owner.bytes;
  owner = Chunk{};
}

void Arena::release(void* pointer) {
  if (pointer == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = used_.find(static_cast<char*>(pointer));
  PLUMB_ASSERT(it != used_.end(), "a block allocated by this arena");
  const Block block = it->second;
  used_.erase(it);
  in_use_ -= block.bytes;
  insert_free(static_cast<char*>(pointer), block);
  drop_chunk_if_idle(block.chunk);
}

size_t Arena::in_use_bytes() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

size_t Arena::peak_in_use_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_in_use_;
}

size_t Arena::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

}  // namespace plumb::cuda

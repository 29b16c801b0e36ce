#pragma once
// Device memory for weights, caches and activations: plain cudaMalloc chunks (never managed memory), carved
// into 256-byte aligned blocks with best fit and coalescing on release. A request larger than a chunk gets a
// chunk of its own, returned to the driver when released. Thread-safe.
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/error.hpp"

namespace plumb::cuda {

class Arena {
 public:
  static constexpr size_t kAlignment = 256;
  static constexpr size_t kDefaultChunkBytes = size_t{256} << 20;

  explicit Arena(int device, size_t chunk_bytes = kDefaultChunkBytes)
      : device_(device), chunk_bytes_(chunk_bytes) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  // A block of at least `bytes` (a zero-byte request still gets a distinct block).
  Result<void*> allocate(size_t bytes);
  // Returns a block from allocate(); work already queued on the device's streams may still use it, which is
  // safe because every reuse is queued behind it on the same stream.
  void release(void* pointer);

  size_t in_use_bytes() const;
  size_t peak_in_use_bytes() const;
  size_t reserved_bytes() const;

 private:
  struct Block {
    size_t bytes = 0;
    size_t chunk = 0;
  };
  struct Chunk {
    char* base = nullptr;
    size_t bytes = 0;
    bool dedicated = false;
  };

  Result<size_t> add_chunk(size_t bytes, bool dedicated);
  void insert_free(char* at, Block block);
  void drop_chunk_if_idle(size_t chunk);

  int device_;
  size_t chunk_bytes_;
  mutable std::mutex mutex_;
  std::vector<Chunk> chunks_;
  std::map<char*, Block> free_;
  std::map<char*, Block> used_;
  size_t in_use_ = 0;
  size_t peak_in_use_ = 0;
  size_t reserved_ = 0;
};

}  // namespace plumb::cuda

#pragma once
// A read-only memory mapping of a whole file; pages are read only when touched, so headers cost no data
// reads.
#include <cstddef>
#include <filesystem>
#include <span>

#include "core/error.hpp"

namespace plumb {

class MappedFile {
 public:
  // Errors name the file: missing, unreadable, not a regular file, or not mappable.
  static Result<MappedFile> open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The file's bytes; the address stays fixed when the MappedFile is moved.
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(address_), size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void release();
  void* address_ = nullptr;
  size_t size_ = 0;
  std::filesystem::path path_;
};

}  // namespace plumb

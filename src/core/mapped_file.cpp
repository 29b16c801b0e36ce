#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/printable.hpp"

namespace plumb {

namespace {
Error file_error(const std::filesystem::path& path, std::string_view problem, std::string_view expected,
                 std::string_view got) {
  return error_at(printable(path.string(), 400), "file", printable(path.filename().string()), problem,
                  expected, got);
}

// Closes the descriptor on every return path; the mapping outlives it.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return file_error(path, "cannot be opened", "a readable file", std::strerror(errno));
  struct stat status {};
  if (::fstat(file.fd, &status) != 0)
    return file_error(path, "cannot be read", "a readable file", std::strerror(errno));
  if (!S_ISREG(status.st_mode)) return file_error(path, "is not a regular file", "a file", "another kind");
  MappedFile mapped;
  mapped.path_ = path;
  mapped.size_ = static_cast<size_t>(status.st_size);
  if (mapped.size_ == 0) return mapped;  // mmap refuses empty lengths; an empty span is the right view
  void* address = ::mmap(nullptr, mapped.size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (address == MAP_FAILED)
    return file_error(path, "cannot be mapped", "a mappable file", std::strerror(errno));
  mapped.address_ = address;
  return mapped;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : address_(std::exchange(other.address_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    address_ = std::exchange(other.address_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  release();
}

void MappedFile::release() {
  if (address_ != nullptr) ::munmap(address_, size_);
  address_ = nullptr;
  size_ = 0;
}

}  // namespace plumb

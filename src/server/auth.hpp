#pragma once
// Bearer API keys. A presented key is hashed and compared with every configured key's hash in constant time,
// so neither the position of a mismatch nor which key matched shows in the timing.
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::server {

class ApiKeys {
 public:
  explicit ApiKeys(const std::vector<std::string>& keys);
  bool required() const { return !hashes_.empty(); }
  // `authorization` is the Authorization header's value ("Bearer <key>").
  bool accepts(std::string_view authorization) const;

 private:
  std::vector<std::array<unsigned char, 32>> hashes_;
};

}  // namespace plumb::server

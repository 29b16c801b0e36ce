#include "server/auth.hpp"

#include <algorithm>
#include <cctype>

#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace plumb::server {

namespace {

std::array<unsigned char, 32> sha256(std::string_view text) {
  std::array<unsigned char, 32> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

}  // namespace

ApiKeys::ApiKeys(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) hashes_.push_back(sha256(key));
}

bool ApiKeys::accepts(std::string_view authorization) const {
  if (hashes_.empty()) return true;
  // The scheme is case-insensitive (RFC 7235); the key is compared exactly.
  constexpr std::string_view kBearer = "bearer ";
  const bool bearer =
      authorization.size() >= kBearer.size() &&
      std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                 [](char want, char got) { return want == std::tolower(static_cast<unsigned char>(got)); });
  const auto presented = sha256(bearer ? authorization.substr(kBearer.size()) : std::string_view());
  // Every key is compared; the result is combined without branching on any one comparison.
  int matched = 0;
  for (const auto& hash : hashes_) matched |= CRYPTO_memcmp(presented.data(), hash.data(), hash.size()) == 0;
  return bearer && matched != 0;
}

}  // namespace plumb::server

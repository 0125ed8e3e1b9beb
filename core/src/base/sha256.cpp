#include "dpushard/base/sha256.hpp"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/regular_file.hpp"

namespace dpushard {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    throw Error("sha256: OpenSSL could not start a digest");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, std::size_t size) {
  if (EVP_DigestUpdate(ctx_, data, size) != 1) throw Error("sha256: OpenSSL update failed");
}

Sha256Digest Sha256::finish() {
  Sha256Digest digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_, digest.data(), &length) != 1 || length != digest.size())
    throw Error("sha256: OpenSSL final failed");
  return digest;
}

Sha256Digest sha256(std::span<const std::uint8_t> bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.finish();
}

Sha256Digest sha256_of_file(const std::filesystem::path& path) {
  const RegularFile file(path);
  Sha256 hash;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t got = ::read(file.fd(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(file.label() + ": read error: " + std::strerror(errno));
    if (got == 0) break;
    hash.update(buffer.data(), static_cast<std::size_t>(got));
  }
  return hash.finish();
}

std::string to_hex(const Sha256Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest.size());
  for (std::uint8_t byte : digest) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 0xF]);
  }
  return hex;
}

Sha256Digest sha256_from_hex(std::string_view hex) {
  const auto refuse = [&] {
    return Error("sha256 '" + std::string(hex) + "' is not 64 hex digits");
  };
  if (hex.size() != 2 * kSha256Bytes) throw refuse();
  const auto nibble = [&](char c) -> std::uint8_t {
    if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<std::uint8_t>(c - 'A' + 10);
    throw refuse();
  };
  Sha256Digest digest{};
  for (std::size_t i = 0; i < kSha256Bytes; ++i)
    digest[i] = static_cast<std::uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return digest;
}

std::string sha256_hex(std::span<const std::int8_t> values) {
  return to_hex(
      sha256(std::span(reinterpret_cast<const std::uint8_t*>(values.data()), values.size())));
}

std::string sha256_file(const std::filesystem::path& path) { return to_hex(sha256_of_file(path)); }

}  // namespace dpushard

#pragma once
// SHA-256, the one way dpushard hashes: fragment files in plans and caches, uploads that
// arrive in chunks, tensors whose contents tests and `exec --json` compare. OpenSSL does
// the hashing; this header fixes the types, the hex spelling and the one-line errors.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace dpushard {

inline constexpr std::size_t kSha256Bytes = 32;
using Sha256Digest = std::array<std::uint8_t, kSha256Bytes>;

// Incremental hashing: update() any number of times, then finish() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, std::size_t size);
  Sha256Digest finish();

 private:
  evp_md_ctx_st* ctx_;
};

Sha256Digest sha256(std::span<const std::uint8_t> bytes);
// The digest of a regular file (RegularFile's one-line refusals for folders and FIFOs).
Sha256Digest sha256_of_file(const std::filesystem::path& path);

// 64 lower-case hex digits, as plan.yaml, caches and `exec --json` write them.
std::string to_hex(const Sha256Digest& digest);
// Reads 64 hex digits (either case); anything else throws dpushard::Error naming the text.
Sha256Digest sha256_from_hex(std::string_view hex);

// Lowercase hex sha256 of int8 values: a tensor's (sha256_hex(tensor.data)), as `exec
// --json`, the orchestrator's output hashes and the invariant tests compare them.
std::string sha256_hex(std::span<const std::int8_t> values);

// to_hex(sha256_of_file(path)).
std::string sha256_file(const std::filesystem::path& path);

}  // namespace dpushard

#pragma once
// Shared-token authentication (HMAC-SHA256 challenge-response, both directions) and the
// sha256 digests that name fragments.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "dpushard/protocol.hpp"

struct evp_md_ctx_st;

namespace dpushard::net {

Digest random_nonce();

// What the client proves: HMAC(token, "dpushard-client" | server nonce | client nonce).
Digest client_proof(const std::string& token, const Digest& server_nonce,
                    const Digest& client_nonce);
// What the worker proves back: HMAC(token, "dpushard-server" | client nonce | server nonce).
Digest server_proof(const std::string& token, const Digest& client_nonce,
                    const Digest& server_nonce);
// Constant-time comparison.
bool digests_equal(const Digest& a, const Digest& b);

Digest sha256_of(std::span<const std::uint8_t> bytes);

// Incremental sha256 (fragment uploads arrive in chunks).
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(const void* data, std::size_t size);
  Digest finish();

 private:
  evp_md_ctx_st* ctx_;
};

}  // namespace dpushard::net

#pragma once
// Shared-token authentication (HMAC-SHA256 challenge-response, both directions).

#include <cstdint>
#include <string>

#include "dpushard/base/sha256.hpp"
#include "dpushard/net/protocol.hpp"

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

}  // namespace dpushard::net

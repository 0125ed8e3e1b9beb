// Shared-token authentication, on OpenSSL.

#include "dpushard/net/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string_view>
#include <vector>

namespace dpushard::net {

namespace {

Digest hmac(const std::string& token, std::string_view label, const Digest& first,
            const Digest& second) {
  std::vector<std::uint8_t> message(label.begin(), label.end());
  message.insert(message.end(), first.begin(), first.end());
  message.insert(message.end(), second.begin(), second.end());
  Digest mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), message.data(),
           message.size(), mac.data(), &length) == nullptr ||
      length != mac.size())
    throw Error("HMAC-SHA256 failed in OpenSSL");
  return mac;
}

}  // namespace

Digest random_nonce() {
  Digest nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1)
    throw Error("OpenSSL could not generate a random nonce");
  return nonce;
}

Digest client_proof(const std::string& token, const Digest& server_nonce,
                    const Digest& client_nonce) {
  return hmac(token, "dpushard-client", server_nonce, client_nonce);
}

Digest server_proof(const std::string& token, const Digest& client_nonce,
                    const Digest& server_nonce) {
  return hmac(token, "dpushard-server", client_nonce, server_nonce);
}

bool digests_equal(const Digest& a, const Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace dpushard::net

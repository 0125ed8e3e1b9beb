// Reading the shared token.

#include "dpushard/net.hpp"
#include "file_bytes.hpp"

namespace dpushard::net {

std::string read_token_file(const std::filesystem::path& path) {
  std::optional<std::string> bytes = read_file_bytes(path);
  if (!bytes) throw Error("token file '" + path.string() + "': cannot read it");
  std::string token = std::move(*bytes);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t'))
    token.pop_back();
  if (token.empty()) throw Error("token file '" + path.string() + "': the token is empty");
  return token;
}

}  // namespace dpushard::net

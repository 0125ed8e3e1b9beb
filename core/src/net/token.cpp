// Reading the shared token.

#include "dpushard/base/regular_file.hpp"
#include "dpushard/net/net.hpp"

namespace dpushard::net {

std::string read_token_file(const std::filesystem::path& path) {
  std::string token = read_regular_file(path, "token file '" + path.string() + "'");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t'))
    token.pop_back();
  if (token.empty()) throw Error("token file '" + path.string() + "': the token is empty");
  return token;
}

}  // namespace dpushard::net

#pragma once
// A minimal blocking HTTP/1.1 client over one keep-alive TCP connection: enough to drive
// `dpushard serve` from the load generator without an HTTP library in the loop.

#include <cstdint>
#include <map>
#include <string>

namespace dpushard::bench {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

class HttpConnection {
 public:
  HttpConnection(std::string host, std::uint16_t port);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Sends one request and reads its reply; reconnects once when the connection was closed.
  // `extra_headers`: complete lines, each ending in "\r\n". Throws std::runtime_error.
  HttpReply request(const std::string& method, const std::string& target,
                    const std::string& body = "", const std::string& extra_headers = "");

 private:
  void connect();
  void close();
  HttpReply read_reply();
  std::string host_;
  std::uint16_t port_;
  int fd_ = -1;
  std::string pending_;  // bytes read past the last reply
};

}  // namespace dpushard::bench

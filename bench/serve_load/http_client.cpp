// The load generator's HTTP client: POSIX sockets, Content-Length bodies only (what serve
// sends).

#include "http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace dpushard::bench {

HttpConnection::HttpConnection(std::string host, std::uint16_t port)
    : host_(std::move(host)), port_(port) {}

HttpConnection::~HttpConnection() { close(); }

void HttpConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pending_.clear();
}

void HttpConnection::connect() {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  if (inet_pton(AF_INET, host_.c_str(), &addr.sin_addr) != 1)
    throw std::runtime_error("'" + host_ + "' is not an IPv4 address");
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = std::strerror(errno);
    close();
    throw std::runtime_error("connect " + host_ + ":" + std::to_string(port_) + ": " + why);
  }
}

HttpReply HttpConnection::request(const std::string& method, const std::string& target,
                                  const std::string& body, const std::string& extra_headers) {
  const std::string head = method + " " + target + " HTTP/1.1\r\nHost: " + host_ +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                           extra_headers + "\r\n";
  for (int attempt = 0;; ++attempt) {
    if (fd_ < 0) connect();
    const std::string message = head + body;
    bool sent = true;
    for (std::size_t done = 0; done < message.size();) {
      const ssize_t n = ::send(fd_, message.data() + done, message.size() - done, MSG_NOSIGNAL);
      if (n <= 0) {
        sent = false;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (sent) {
      try {
        return read_reply();
      } catch (const std::runtime_error&) {
        if (attempt > 0) throw;
      }
    } else if (attempt > 0) {
      throw std::runtime_error("send failed: the server closed the connection");
    }
    close();  // a keep-alive connection the server closed: once more on a new one
  }
}

HttpReply HttpConnection::read_reply() {
  auto fill = [&] {
    char buffer[65536];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) throw std::runtime_error("the server closed the connection");
    pending_.append(buffer, static_cast<std::size_t>(n));
  };
  std::size_t end;
  while ((end = pending_.find("\r\n\r\n")) == std::string::npos) fill();
  HttpReply reply;
  const std::string head = pending_.substr(0, end);
  pending_.erase(0, end + 4);
  const auto first_space = head.find(' ');
  if (first_space == std::string::npos) throw std::runtime_error("bad status line");
  reply.status = std::atoi(head.c_str() + first_space + 1);
  std::size_t line = head.find("\r\n");
  while (line != std::string::npos) {
    const std::size_t next = head.find("\r\n", line + 2);
    const std::string field =
        head.substr(line + 2, next == std::string::npos ? std::string::npos : next - line - 2);
    const auto colon = field.find(':');
    if (colon != std::string::npos) {
      std::string name = field.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      std::string value = field.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      reply.headers[name] = value;
    }
    line = next;
  }
  const auto length = reply.headers.find("content-length");
  const std::size_t size = length == reply.headers.end() ? 0 : std::stoull(length->second);
  while (pending_.size() < size) fill();
  reply.body = pending_.substr(0, size);
  pending_.erase(0, size);
  const auto connection = reply.headers.find("connection");
  if (connection != reply.headers.end() && connection->second == "close") close();
  return reply;
}

}  // namespace dpushard::bench

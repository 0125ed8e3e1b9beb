#pragma once
// Little-endian field writer and bounds-checked reader for frame metadata.

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/net/protocol.hpp"

namespace dpushard::net::wire {

class Writer {
 public:
  explicit Writer(std::vector<std::uint8_t>& out) : out_(out) {}

  void u8(std::uint8_t value) { out_.push_back(value); }
  void u16(std::uint16_t value) { le(value, 2); }
  void u32(std::uint32_t value) { le(value, 4); }
  void u64(std::uint64_t value) { le(value, 8); }
  void i32(std::int32_t value) { u32(static_cast<std::uint32_t>(value)); }
  void i64(std::int64_t value) { u64(static_cast<std::uint64_t>(value)); }
  void digest(const Digest& value) { out_.insert(out_.end(), value.begin(), value.end()); }
  // u32 byte length, then the bytes (no terminator).
  void str(std::string_view value);

 private:
  void le(std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  }
  std::vector<std::uint8_t>& out_;
};

// Every read checks the remaining bytes first and throws ProtocolError(kMalformed) naming
// the field, so a hostile length can never make the reader run past the metadata.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::uint8_t u8(const char* field) { return static_cast<std::uint8_t>(le(field, 1)); }
  std::uint16_t u16(const char* field) { return static_cast<std::uint16_t>(le(field, 2)); }
  std::uint32_t u32(const char* field) { return static_cast<std::uint32_t>(le(field, 4)); }
  std::uint64_t u64(const char* field) { return le(field, 8); }
  std::int32_t i32(const char* field) { return static_cast<std::int32_t>(u32(field)); }
  std::int64_t i64(const char* field) { return static_cast<std::int64_t>(u64(field)); }
  Digest digest(const char* field);
  std::string str(const char* field, std::size_t max_bytes = kMaxNameBytes);
  // A u32 element count, checked against what the remaining bytes can hold given the
  // smallest encoding of one element (so no reserve() can be driven by a forged count).
  std::uint32_t count(const char* field, std::size_t min_element_bytes);

  std::size_t remaining() const { return bytes_.size() - offset_; }
  void expect_end(const char* message_name) const;

 private:
  void need(const char* field, std::size_t bytes) const;
  std::uint64_t le(const char* field, int bytes);

  std::span<const std::uint8_t> bytes_;
  std::size_t offset_ = 0;
};

}  // namespace dpushard::net::wire

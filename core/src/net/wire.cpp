// Little-endian field writer and bounds-checked reader for frame metadata.

#include "wire.hpp"

namespace dpushard::net::wire {

void Writer::str(std::string_view value) {
  u32(static_cast<std::uint32_t>(value.size()));
  out_.insert(out_.end(), value.begin(), value.end());
}

void Reader::need(const char* field, std::size_t bytes) const {
  if (bytes > remaining())
    throw ProtocolError(ErrorCode::kMalformed,
                        std::string("truncated metadata at field '") + field + "'");
}

std::uint64_t Reader::le(const char* field, int bytes) {
  need(field, static_cast<std::size_t>(bytes));
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= std::uint64_t{bytes_[offset_ + static_cast<std::size_t>(i)]} << (8 * i);
  offset_ += static_cast<std::size_t>(bytes);
  return value;
}

Digest Reader::digest(const char* field) {
  need(field, kDigestBytes);
  Digest value{};
  std::memcpy(value.data(), bytes_.data() + offset_, kDigestBytes);
  offset_ += kDigestBytes;
  return value;
}

std::string Reader::str(const char* field, std::size_t max_bytes) {
  const std::uint32_t length = u32(field);
  if (length > max_bytes)
    throw ProtocolError(ErrorCode::kMalformed,
                        std::string("field '") + field + "' is " + std::to_string(length) +
                            " bytes, more than the limit " + std::to_string(max_bytes));
  need(field, length);
  std::string value(reinterpret_cast<const char*>(bytes_.data() + offset_), length);
  offset_ += length;
  return value;
}

std::uint32_t Reader::count(const char* field, std::size_t min_element_bytes) {
  const std::uint32_t value = u32(field);
  if (min_element_bytes > 0 && value > remaining() / min_element_bytes)
    throw ProtocolError(ErrorCode::kMalformed, std::string("count ") + std::to_string(value) +
                                                   " of field '" + field +
                                                   "' exceeds the metadata size");
  return value;
}

void Reader::expect_end(const char* message_name) const {
  if (remaining() != 0)
    throw ProtocolError(
        ErrorCode::kMalformed,
        std::to_string(remaining()) + " trailing metadata bytes after " + message_name);
}

}  // namespace dpushard::net::wire

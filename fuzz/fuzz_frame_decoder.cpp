// libFuzzer target: the protocol frame decoder, on bytes as a hostile peer would send them.
// Any input must either decode or throw ProtocolError; a decoded frame must encode back to
// a frame that decodes to the same message.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "dpushard/net/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dpushard::net;
  Limits limits;
  limits.max_meta_bytes = 1u << 16;
  limits.max_payload_bytes = 1u << 20;
  const std::span<const std::uint8_t> bytes(data, size);
  for (const bool authenticated : {false, true}) {
    try {
      const Message message = decode_frame(bytes, limits, authenticated);
      const Message again = decode_frame(encode_frame(message), limits, true);
      if (!(again == message)) std::abort();
    } catch (const ProtocolError&) {
      // Rejected, as hostile input should be.
    }
  }
  // The streaming path: the header alone decides whether anything is allocated.
  if (size >= kHeaderBytes) {
    try {
      const FrameHeader header = parse_header(bytes.first(kHeaderBytes), limits, true);
      const std::size_t meta = std::min<std::size_t>(header.meta_bytes, size - kHeaderBytes);
      (void)decode_meta(header, bytes.subspan(kHeaderBytes, meta), limits);
    } catch (const ProtocolError&) {
    }
  }
  return 0;
}

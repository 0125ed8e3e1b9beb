// The frame codec: byte layout, round trips of every message, and rejection of every
// malformed case with the right error code.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include "dpushard/net/protocol.hpp"

namespace dpushard::net {
namespace {

Digest digest_of(std::uint8_t seed) {
  Digest d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(seed + i);
  return d;
}

QTensor tensor_of(std::vector<std::int64_t> shape) {
  return random_qtensor("fix_x", std::move(shape), 5, 42);
}

std::vector<Message> one_of_each() {
  Load load;
  load.job = 0x1122334455667788ULL;
  load.node = "n1";
  load.inflight = 4;
  load.peers = {{"n0", "127.0.0.1:7000"}, {"n1", "127.0.0.1:7001"}};
  FragmentAssignment fragment;
  fragment.slot = 3;
  fragment.sha = digest_of(9);
  fragment.name = "expert_0";
  fragment.outputs = {{Destination{{Target{"n0", 7}}, 1}, Destination{{Target{}}, 0}},
                      {Destination{{Target{"n1", 4}, Target{"n2", 5}}, 0}}};
  load.fragments = {fragment};
  UploadChunk chunk{digest_of(1), 10, 4, {1, 2, 3}};
  QTensor timing_only = tensor_of({2, 2});
  timing_only.computed = false;
  Stats stats{7, {{1, 10, 12345, 3}, {2, 11, 999, 1}}, 4096, 77};
  return {Hello{kProtocolVersion, PeerRole::kWorker, "w0", digest_of(2), 150},
          Challenge{kProtocolVersion, "worker@x", digest_of(3)},
          Auth{digest_of(4)},
          AuthOk{digest_of(5), "ref"},
          AuthOk{digest_of(5), "vart", 0x101000016010407ULL, 1},
          ErrorMsg{ErrorCode::kAuthFailed, 12, "wrong token"},
          Heartbeat{99},
          HaveQuery{{digest_of(6), digest_of(7)}},
          HaveReply{{1, 0}},
          chunk,
          UploadDone{digest_of(8)},
          load,
          Loaded{5, 4},
          Unload{5},
          Shutdown{},
          TensorMsg{5, 17, 3, 1, tensor_of({1, 4, 4, 8})},
          TensorMsg{5, 18, kOrchestratorSlot, 0, tensor_of({})},
          TensorMsg{5, 19, 2, 0, timing_only},
          FrameError{5, 17, ErrorCode::kPeerLost, "n2", "connection lost"},
          StatsRequest{5},
          stats};
}

TEST(NetProtocol, EveryMessageRoundTrips) {
  for (const Message& message : one_of_each()) {
    SCOPED_TRACE(std::string(message_type_name(type_of(message))));
    const auto bytes = encode_frame(message);
    EXPECT_EQ(decode_frame(bytes, Limits{}, /*authenticated=*/true), message);
  }
}

TEST(NetProtocol, AuthOkEndsWithTheDpu) {
  // Version 3: backend, then u64 fingerprint and u32 batch; a version 2 AUTH_OK (which ended
  // at the backend) is malformed, and so is one with bytes after the batch.
  const auto bytes = encode_frame(AuthOk{digest_of(5), "vart", 0x0102030405060708ULL, 6});
  const std::vector<std::uint8_t> tail = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03,
                                          0x02, 0x01, 0x06, 0x00, 0x00, 0x00};
  ASSERT_GE(bytes.size(), tail.size());
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), bytes.end() - 12));
  auto v2 = encode_frame(AuthOk{digest_of(5), "vart"});
  v2.resize(v2.size() - 12);
  v2[8] = static_cast<std::uint8_t>(v2[8] - 12);  // metadata bytes
  try {
    decode_frame(v2, Limits{}, false);
    FAIL() << "a version 2 AUTH_OK decoded";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMalformed);
  }
}

TEST(NetProtocol, HeaderLayoutIsByteExact) {
  const auto bytes = encode_frame(Heartbeat{0x0102030405060708ULL});
  const std::vector<std::uint8_t> expected = {
      'D',  'P',  'S',  'H',                            // magic
      0x06, 0x00,                                       // type HEARTBEAT
      0x00, 0x00,                                       // flags
      0x08, 0x00, 0x00, 0x00,                           // metadata bytes
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,   // payload bytes
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};  // sequence
  EXPECT_EQ(bytes, expected);
}

TEST(NetProtocol, TensorHeadLeavesThePayloadOut) {
  const QTensor t = tensor_of({2, 3});
  const auto head = encode_tensor_head(1, 2, 3, 4, t);
  auto whole = encode_frame(TensorMsg{1, 2, 3, 4, t});
  ASSERT_EQ(whole.size(), head.size() + 6);
  EXPECT_TRUE(std::equal(head.begin(), head.end(), whole.begin()));
  EXPECT_EQ(std::memcmp(whole.data() + head.size(), t.data.data(), 6), 0);
  const FrameHeader h = parse_header(head, Limits{}, true);
  EXPECT_EQ(h.type, MessageType::kTensor);
  EXPECT_EQ(h.payload_bytes, 6u);
  EXPECT_EQ(h.meta_bytes, head.size() - kHeaderBytes);
}

// Decodes `bytes` and returns the error code it is rejected with.
ErrorCode rejection(const std::vector<std::uint8_t>& bytes, bool authenticated = true,
                    Limits limits = {}) {
  try {
    decode_frame(bytes, limits, authenticated);
  } catch (const ProtocolError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.code();
  }
  ADD_FAILURE() << "frame was accepted";
  return ErrorCode::kInternal;
}

void put_u32(std::vector<std::uint8_t>& bytes, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i)
    bytes[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
}
void put_u64(std::vector<std::uint8_t>& bytes, std::size_t at, std::uint64_t value) {
  for (int i = 0; i < 8; ++i)
    bytes[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
}

TEST(NetProtocol, RejectsBadHeaders) {
  const auto good = encode_frame(Heartbeat{1});
  auto bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_EQ(rejection(bad_magic), ErrorCode::kMalformed);
  auto flags = good;
  flags[6] = 1;
  EXPECT_EQ(rejection(flags), ErrorCode::kMalformed);
  auto unknown = good;
  unknown[4] = 0x7F;
  EXPECT_EQ(rejection(unknown), ErrorCode::kUnknownType);
  EXPECT_EQ(rejection(std::vector<std::uint8_t>(good.begin(), good.begin() + 10)),
            ErrorCode::kMalformed);
  auto short_frame = good;
  short_frame.pop_back();
  EXPECT_EQ(rejection(short_frame), ErrorCode::kMalformed);
  auto long_frame = good;
  long_frame.push_back(0);
  EXPECT_EQ(rejection(long_frame), ErrorCode::kMalformed);
}

TEST(NetProtocol, RejectsOversizeFramesBeforeReadingThem) {
  auto huge_payload = encode_frame(TensorMsg{1, 2, 3, 0, tensor_of({4})});
  put_u64(huge_payload, 12, std::uint64_t{1} << 40);
  // Only the header is given: the size check must not need the rest.
  const std::vector<std::uint8_t> header(huge_payload.begin(), huge_payload.begin() + kHeaderBytes);
  try {
    parse_header(header, Limits{}, true);
    ADD_FAILURE() << "accepted";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFrameTooLarge);
  }
  auto huge_meta = encode_frame(Heartbeat{1});
  put_u32(huge_meta, 8, 0xFFFFFFFFu);
  EXPECT_EQ(rejection(huge_meta), ErrorCode::kFrameTooLarge);
  Limits small;
  small.max_payload_bytes = 8;
  EXPECT_EQ(rejection(encode_frame(TensorMsg{1, 2, 3, 0, tensor_of({16})}), true, small),
            ErrorCode::kFrameTooLarge);
  // Before authentication the limits are the handshake's.
  Hello hello{kProtocolVersion, PeerRole::kOrchestrator, std::string(5000, 'x'), {}};
  EXPECT_EQ(rejection(encode_frame(hello), false), ErrorCode::kFrameTooLarge);
}

TEST(NetProtocol, OnlyHandshakeMessagesBeforeAuthentication) {
  EXPECT_EQ(rejection(encode_frame(HaveQuery{}), false), ErrorCode::kUnexpectedMessage);
  EXPECT_EQ(rejection(encode_frame(TensorMsg{1, 2, 3, 0, tensor_of({2})}), false),
            ErrorCode::kUnexpectedMessage);
  EXPECT_NO_THROW(decode_frame(encode_frame(Hello{}), Limits{}, false));
}

TEST(NetProtocol, PayloadOnlyWhereTheTypeHasOne) {
  auto bytes = encode_frame(Heartbeat{1});
  put_u64(bytes, 12, 1);
  bytes.push_back(0);
  EXPECT_EQ(rejection(bytes), ErrorCode::kMalformed);
}

TEST(NetProtocol, VersionMismatchIsNamed) {
  Hello hello;
  hello.version = 99;
  EXPECT_EQ(rejection(encode_frame(hello), false), ErrorCode::kVersionMismatch);
  // Whatever follows the version in another protocol version.
  auto bytes = encode_frame(Hello{});
  bytes[kHeaderBytes] = static_cast<std::uint8_t>(kProtocolVersion + 1);
  bytes.resize(kHeaderBytes + 2);
  put_u32(bytes, 8, 2);
  EXPECT_EQ(rejection(bytes, false), ErrorCode::kVersionMismatch);
}

TEST(NetProtocol, RejectsMalformedMetadata) {
  // A string length past the end of the metadata.
  auto name = encode_frame(Hello{kProtocolVersion, PeerRole::kWorker, "abc", {}});
  put_u32(name, kHeaderBytes + 3, 1000);
  EXPECT_EQ(rejection(name, false), ErrorCode::kMalformed);
  // A forged element count cannot drive an allocation.
  auto count = encode_frame(HaveQuery{{digest_of(1)}});
  put_u32(count, kHeaderBytes, 0xFFFFFFFFu);
  EXPECT_EQ(rejection(count), ErrorCode::kMalformed);
  // Trailing metadata.
  auto trailing = encode_frame(Heartbeat{1});
  put_u32(trailing, 8, 9);
  trailing.push_back(0);
  EXPECT_EQ(rejection(trailing), ErrorCode::kMalformed);
  // Unknown role, have flag out of range, zero inflight.
  auto role = encode_frame(Hello{});
  role[kHeaderBytes + 2] = 9;
  EXPECT_EQ(rejection(role, false), ErrorCode::kMalformed);
  auto have = encode_frame(HaveReply{{1}});
  have.back() = 2;
  EXPECT_EQ(rejection(have), ErrorCode::kMalformed);
  Load load;
  load.inflight = 0;
  EXPECT_EQ(rejection(encode_frame(load)), ErrorCode::kMalformed);
  Load no_replicas;
  no_replicas.fragments = {FragmentAssignment{1, {}, "f", {{Destination{{}, 0}}}}};
  EXPECT_EQ(rejection(encode_frame(no_replicas)), ErrorCode::kMalformed);
  Load orchestrator_slot;
  orchestrator_slot.fragments = {
      FragmentAssignment{1, {}, "f", {{Destination{{Target{"", 3}}, 0}}}}};
  EXPECT_EQ(rejection(encode_frame(orchestrator_slot)), ErrorCode::kMalformed);
}

TEST(NetProtocol, RejectsInconsistentTensors) {
  // Element count and payload disagree.
  auto bytes = encode_frame(TensorMsg{1, 2, 3, 0, tensor_of({2, 2})});
  bytes.pop_back();
  put_u64(bytes, 12, 3);
  EXPECT_EQ(rejection(bytes), ErrorCode::kMalformed);
  QTensor negative = tensor_of({2});
  negative.shape = {-1, -2};
  negative.data.resize(2);
  EXPECT_EQ(rejection(encode_frame(TensorMsg{1, 2, 3, 0, negative})), ErrorCode::kMalformed);
  QTensor deep = tensor_of({});
  deep.shape = std::vector<std::int64_t>(9, 1);
  EXPECT_EQ(rejection(encode_frame(TensorMsg{1, 2, 3, 0, deep})), ErrorCode::kMalformed);
  QTensor overflow = tensor_of({1});
  overflow.shape = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_EQ(rejection(encode_frame(TensorMsg{1, 2, 3, 0, overflow})), ErrorCode::kFrameTooLarge);
  // Unknown tensor flags (the byte after fix_point, which follows job, frame, slot, index).
  auto flags = encode_frame(TensorMsg{1, 2, 3, 0, tensor_of({1})});
  flags[kHeaderBytes + 8 + 8 + 4 + 4 + 4] = 0x80;
  EXPECT_EQ(rejection(flags), ErrorCode::kMalformed);
  QTensor wild_fix = tensor_of({1});
  wild_fix.fix_point = 1000;
  EXPECT_EQ(rejection(encode_frame(TensorMsg{1, 2, 3, 0, wild_fix})), ErrorCode::kMalformed);
}

TEST(NetProtocol, RejectsUploadOverruns) {
  EXPECT_EQ(rejection(encode_frame(UploadChunk{digest_of(1), 4, 2, {1, 2, 3}})),
            ErrorCode::kMalformed);
  EXPECT_EQ(rejection(encode_frame(UploadChunk{digest_of(1), 4, 9, {}})), ErrorCode::kMalformed);
  EXPECT_EQ(rejection(encode_frame(UploadChunk{digest_of(1), 8, 0, {}})), ErrorCode::kMalformed);
}

TEST(NetProtocol, EveryTruncationIsRejected) {
  for (const Message& message : one_of_each()) {
    const auto bytes = encode_frame(message);
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
      std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(cut));
      EXPECT_THROW(decode_frame(prefix, Limits{}, true), ProtocolError);
    }
  }
}

TEST(NetProtocol, EveryErrorCodeHasItsOwnName) {
  // The names are what operators read in the orchestrator's one-line errors (docs/protocol.md).
  std::set<std::string_view> names;
  for (std::uint16_t code = 1; code <= 15; ++code) {
    const std::string_view name = error_code_name(static_cast<ErrorCode>(code));
    EXPECT_NE(name, "unknown") << code;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 15u);
  EXPECT_EQ(error_code_name(ErrorCode::kDeviceFailed), "device_failed");
  EXPECT_EQ(error_code_name(static_cast<ErrorCode>(16)), "unknown");
}

}  // namespace
}  // namespace dpushard::net

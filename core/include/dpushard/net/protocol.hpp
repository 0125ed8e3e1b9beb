#pragma once
// The dpushard wire protocol (docs/protocol.md is the byte-exact specification).
//
// Every message is one frame: a fixed 20-byte header, a metadata block and an optional
// payload (int8 tensor values or fragment bytes). All integers are little-endian. The
// header's sizes are checked against Limits before anything is allocated; before a peer
// has authenticated only the handshake messages, with small metadata and no payload,
// are accepted.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::net {

inline constexpr std::uint32_t kMagic = 0x48535044;  // bytes 'D' 'P' 'S' 'H'
// 2: HELLO asks for a heartbeat interval, LOAD carries the link. (Error code 15 came later
// without a new version: a peer that does not know it names it "unknown" and keeps the text.)
// 3: AUTH_OK carries the worker's DPU (fingerprint and batch; 0 without a DPU).
// 4: LOADED carries the batch the DPU's runners took for the job's fragments.
inline constexpr std::uint16_t kProtocolVersion = 4;
inline constexpr std::size_t kHeaderBytes = 20;
inline constexpr std::size_t kDigestBytes = kSha256Bytes;  // sha256 hashes, nonces and HMACs
inline constexpr std::size_t kMaxNameBytes = 4096;
inline constexpr std::size_t kMaxTensorRank = 8;
// TensorMsg::slot value that addresses the orchestrator; index is then a plan output.
inline constexpr std::uint32_t kOrchestratorSlot = 0xFFFFFFFFu;
inline constexpr std::uint64_t kNoFrame = ~std::uint64_t{0};

using Digest = Sha256Digest;

enum class MessageType : std::uint16_t {
  kHello = 0x01,
  kChallenge = 0x02,
  kAuth = 0x03,
  kAuthOk = 0x04,
  kError = 0x05,
  kHeartbeat = 0x06,
  kHaveQuery = 0x10,
  kHaveReply = 0x11,
  kUploadChunk = 0x12,
  kUploadDone = 0x13,
  kLoad = 0x20,
  kLoaded = 0x21,
  kUnload = 0x22,
  kShutdown = 0x23,
  kTensor = 0x30,
  kFrameError = 0x31,
  kStatsRequest = 0x40,
  kStats = 0x41,
};

enum class ErrorCode : std::uint16_t {
  kMalformed = 1,          // a frame or field that does not decode
  kVersionMismatch = 2,    // the peer speaks another protocol version
  kAuthFailed = 3,         // wrong token
  kFrameTooLarge = 4,      // a size in the header exceeds the limits
  kUnknownType = 5,        // a message type this version does not define
  kUnexpectedMessage = 6,  // a known message at the wrong time or from the wrong role
  kBadFragment = 7,        // hash mismatch, missing fragment, or a fragment that fails to load
  kNoSuchJob = 8,          // a job id the worker does not hold
  kQueueFull = 9,          // more frames in flight than the fragment queue admits
  kComputeFailed = 10,     // the backend threw while running a frame
  kPeerLost = 11,          // a connection to another worker closed or timed out
  kTimeout = 12,           // no message within the peer timeout
  kShuttingDown = 13,      // the worker is stopping
  kInternal = 14,          // anything else
  kDeviceFailed = 15,      // the accelerator failed a frame and was restarted (DeviceError)
};

std::string_view message_type_name(MessageType type);
std::string_view error_code_name(ErrorCode code);
bool is_known_message_type(std::uint16_t type);

// A protocol violation: its code travels in the ERROR message sent before the peer is dropped.
class ProtocolError : public Error {
 public:
  ProtocolError(ErrorCode code, const std::string& message) : Error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

struct Limits {
  std::uint32_t max_meta_bytes = 1u << 20;
  std::uint64_t max_payload_bytes = std::uint64_t{256} << 20;  // one tensor or upload chunk
};
// What a connection accepts before authentication: handshake messages only, no payload.
inline constexpr std::uint32_t kHandshakeMaxMetaBytes = 4096;

struct FrameHeader {
  MessageType type = MessageType::kHeartbeat;
  std::uint32_t meta_bytes = 0;
  std::uint64_t payload_bytes = 0;
};

enum class PeerRole : std::uint8_t { kOrchestrator = 1, kWorker = 2 };

// --- Messages ----------------------------------------------------------------------------
// Each message names its type (kType); protocol.cpp holds the one table of what a type
// allows (before authentication, a payload) and how it decodes.
struct Hello {
  static constexpr MessageType kType = MessageType::kHello;
  std::uint16_t version = kProtocolVersion;
  PeerRole role = PeerRole::kOrchestrator;
  std::string name;
  Digest nonce{};
  // How often the client wants a sign of life from the worker, in ms (0: the worker's own
  // interval). A client derives it from its peer timeout, so a short timeout is served.
  std::uint32_t heartbeat_ms = 0;
  bool operator==(const Hello&) const = default;
};
struct Challenge {
  static constexpr MessageType kType = MessageType::kChallenge;
  std::uint16_t version = kProtocolVersion;
  std::string name;
  Digest nonce{};
  bool operator==(const Challenge&) const = default;
};
struct Auth {
  static constexpr MessageType kType = MessageType::kAuth;
  Digest mac{};
  bool operator==(const Auth&) const = default;
};
struct AuthOk {
  static constexpr MessageType kType = MessageType::kAuthOk;
  Digest mac{};
  std::string backend;
  // The DPU the worker's backend runs on (vart): the fingerprint `xdputil query` and a
  // compiled subgraph's `dpu_fingerprint` give, and the runner's batch. 0: no DPU (ref, cpu,
  // sim) or not known.
  std::uint64_t dpu_fingerprint = 0;
  std::uint32_t dpu_batch = 0;
  bool operator==(const AuthOk&) const = default;
};
struct ErrorMsg {
  static constexpr MessageType kType = MessageType::kError;
  ErrorCode code = ErrorCode::kInternal;
  std::uint64_t frame = kNoFrame;
  std::string message;
  bool operator==(const ErrorMsg&) const = default;
};
struct Heartbeat {
  static constexpr MessageType kType = MessageType::kHeartbeat;
  std::uint64_t sequence = 0;
  bool operator==(const Heartbeat&) const = default;
};
struct HaveQuery {
  static constexpr MessageType kType = MessageType::kHaveQuery;
  std::vector<Digest> hashes;
  bool operator==(const HaveQuery&) const = default;
};
struct HaveReply {
  static constexpr MessageType kType = MessageType::kHaveReply;
  std::vector<std::uint8_t> have;  // one 0/1 per queried hash, in query order
  bool operator==(const HaveReply&) const = default;
};
struct UploadChunk {
  static constexpr MessageType kType = MessageType::kUploadChunk;
  Digest sha{};
  std::uint64_t total_bytes = 0;
  std::uint64_t offset = 0;
  std::vector<std::int8_t> bytes;  // the payload
  bool operator==(const UploadChunk&) const = default;
};
struct UploadDone {
  static constexpr MessageType kType = MessageType::kUploadDone;
  Digest sha{};
  bool operator==(const UploadDone&) const = default;
};
// One fragment instance: a slot on a node. The orchestrator is node "" and slot
// kOrchestratorSlot.
struct Target {
  std::string node;
  std::uint32_t slot = kOrchestratorSlot;
  bool operator==(const Target&) const = default;
};
// Where one fragment output goes: an input of another fragment (on any node, this one
// included) or a plan output at the orchestrator. A replicated consumer lists all its
// instances; frame f goes to replicas[f % replicas.size()].
struct Destination {
  std::vector<Target> replicas;
  std::uint32_t index = 0;  // the consumer's input index, or the plan output index
  bool operator==(const Destination&) const = default;
  const Target& target_for(std::uint64_t frame) const {
    return replicas[static_cast<std::size_t>(frame % replicas.size())];
  }
};
struct FragmentAssignment {
  std::uint32_t slot = 0;  // the fragment's id within the job, unique across nodes
  Digest sha{};
  std::string name;
  std::vector<std::vector<Destination>> outputs;  // per fragment output
  bool operator==(const FragmentAssignment&) const = default;
};
struct PeerAddress {
  std::string name;
  std::string address;  // host:port
  bool operator==(const PeerAddress&) const = default;
};
struct Load {
  static constexpr MessageType kType = MessageType::kLoad;
  std::uint64_t job = 0;
  std::string node;            // the name the receiving worker has in this job
  std::uint32_t inflight = 1;  // frames the orchestrator keeps in flight at most
  std::vector<PeerAddress> peers;
  std::vector<FragmentAssignment> fragments;
  // The emulated link of the job (docs/cluster.md): every node's port paces what it sends
  // and receives to this rate; 0: unshaped. Plus a one-way latency added to every send.
  std::uint64_t link_bits_per_s = 0;
  std::uint32_t link_latency_us = 0;
  bool operator==(const Load&) const = default;
};
struct Loaded {
  static constexpr MessageType kType = MessageType::kLoaded;
  std::uint64_t job = 0;
  // Frames per job of the runners the node's device opened for the job's fragments (vart:
  // VART's runner input tensor's first dimension; the largest over the fragments); 0 for
  // backends without a device.
  std::uint32_t runner_batch = 0;
  bool operator==(const Loaded&) const = default;
};
struct Unload {
  static constexpr MessageType kType = MessageType::kUnload;
  std::uint64_t job = 0;
  bool operator==(const Unload&) const = default;
};
struct Shutdown {
  static constexpr MessageType kType = MessageType::kShutdown;
  bool operator==(const Shutdown&) const = default;
};
struct TensorMsg {
  static constexpr MessageType kType = MessageType::kTensor;
  std::uint64_t job = 0;
  std::uint64_t frame = 0;
  std::uint32_t slot = 0;   // consuming fragment, or kOrchestratorSlot
  std::uint32_t index = 0;  // its input index, or the plan output index
  QTensor tensor;           // data is the payload; `computed` travels as a flag
  bool operator==(const TensorMsg&) const = default;
};
struct FrameError {
  static constexpr MessageType kType = MessageType::kFrameError;
  std::uint64_t job = 0;
  std::uint64_t frame = kNoFrame;
  ErrorCode code = ErrorCode::kInternal;
  std::string node;  // the node at fault (which may be a peer of the sender)
  std::string message;
  bool operator==(const FrameError&) const = default;
};
struct StatsRequest {
  static constexpr MessageType kType = MessageType::kStatsRequest;
  std::uint64_t job = 0;
  bool operator==(const StatsRequest&) const = default;
};
struct FragmentStats {
  std::uint32_t slot = 0;
  std::uint64_t frames = 0;
  std::uint64_t busy_ns = 0;
  std::uint32_t max_queue = 0;  // most frames waiting for this fragment at once
  std::uint64_t cpu_ns = 0;     // CPU time of the compute threads inside the backend
  bool operator==(const FragmentStats&) const = default;
};
struct Stats {
  static constexpr MessageType kType = MessageType::kStats;
  std::uint64_t job = 0;
  std::vector<FragmentStats> fragments;
  std::uint64_t tensor_bytes_sent = 0;  // TENSOR frames written to the network, headers included
  std::uint64_t upload_bytes_received = 0;  // fragment bytes this worker ever received
  // The worker process's CPU time (user + system, every thread) from the job's first
  // tensor to this answer: its own cost on the machine it runs on, not modeled time.
  std::uint64_t cpu_ns = 0;
  bool operator==(const Stats&) const = default;
};

using Message = std::variant<Hello, Challenge, Auth, AuthOk, ErrorMsg, Heartbeat, HaveQuery,
                             HaveReply, UploadChunk, UploadDone, Load, Loaded, Unload, Shutdown,
                             TensorMsg, FrameError, StatsRequest, Stats>;

MessageType type_of(const Message& message);

// --- Encoding ----------------------------------------------------------------------------
// Header and metadata of `message`; the payload (tensor data or chunk bytes) is NOT
// included, so it can be written from where it lies (scatter-gather).
std::vector<std::uint8_t> encode_head(const Message& message);
// The head of a TENSOR frame for `tensor`, without copying its values.
std::vector<std::uint8_t> encode_tensor_head(std::uint64_t job, std::uint64_t frame,
                                             std::uint32_t slot, std::uint32_t index,
                                             const QTensor& tensor);
// The head of an UPLOAD_CHUNK frame whose payload is `chunk_bytes` bytes.
std::vector<std::uint8_t> encode_upload_head(const Digest& sha, std::uint64_t total_bytes,
                                             std::uint64_t offset, std::uint64_t chunk_bytes);
// Head and payload in one buffer (tests, fuzzing, small messages).
std::vector<std::uint8_t> encode_frame(const Message& message);

// --- Decoding ----------------------------------------------------------------------------
// Checks magic, flags, type and sizes. `authenticated` false allows handshake messages only.
FrameHeader parse_header(std::span<const std::uint8_t> bytes, const Limits& limits,
                         bool authenticated);
// Decodes the metadata of a frame whose header is `header`. Checks that the payload size
// the header announced is the one the metadata implies (tensor element count, chunk
// within its upload) but does not allocate it: payload_target() says where it goes.
Message decode_meta(const FrameHeader& header, std::span<const std::uint8_t> meta,
                    const Limits& limits);
// The buffer that receives the payload of `message` (tensor data or chunk bytes), or
// nullptr for messages without payload.
std::vector<std::int8_t>* payload_target(Message& message);
// Decodes one complete frame (exactly `bytes`). Throws ProtocolError.
Message decode_frame(std::span<const std::uint8_t> bytes, const Limits& limits, bool authenticated);

}  // namespace dpushard::net

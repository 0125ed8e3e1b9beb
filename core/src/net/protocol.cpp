// Encoding and decoding of protocol frames (docs/protocol.md).

#include "dpushard/net/protocol.hpp"

#include <iterator>
#include <type_traits>
#include <utility>

#include "wire.hpp"

namespace dpushard::net {

namespace {

constexpr std::size_t kMaxMessageText = 65536;
constexpr std::uint64_t kMaxUploadBytes = std::uint64_t{1} << 40;
constexpr int kMaxFixPoint = 64;
// TENSOR flags bit 0: the values were not computed (a timing-only backend).
constexpr std::uint8_t kTensorNotComputed = 1;

// --- metadata writers ---
void put(wire::Writer& w, const Hello& m) {
  w.u16(m.version);
  w.u8(static_cast<std::uint8_t>(m.role));
  w.str(m.name);
  w.digest(m.nonce);
  w.u32(m.heartbeat_ms);
}
void put(wire::Writer& w, const Challenge& m) {
  w.u16(m.version);
  w.str(m.name);
  w.digest(m.nonce);
}
void put(wire::Writer& w, const Auth& m) { w.digest(m.mac); }
void put(wire::Writer& w, const AuthOk& m) {
  w.digest(m.mac);
  w.str(m.backend);
  w.u64(m.dpu_fingerprint);
  w.u32(m.dpu_batch);
}
void put(wire::Writer& w, const ErrorMsg& m) {
  w.u16(static_cast<std::uint16_t>(m.code));
  w.u64(m.frame);
  w.str(m.message);
}
void put(wire::Writer& w, const Heartbeat& m) { w.u64(m.sequence); }
void put(wire::Writer& w, const HaveQuery& m) {
  w.u32(static_cast<std::uint32_t>(m.hashes.size()));
  for (const Digest& sha : m.hashes) w.digest(sha);
}
void put(wire::Writer& w, const HaveReply& m) {
  w.u32(static_cast<std::uint32_t>(m.have.size()));
  for (std::uint8_t have : m.have) w.u8(have);
}
void put_upload(wire::Writer& w, const Digest& sha, std::uint64_t total, std::uint64_t offset) {
  w.digest(sha);
  w.u64(total);
  w.u64(offset);
}
void put(wire::Writer& w, const UploadChunk& m) { put_upload(w, m.sha, m.total_bytes, m.offset); }
void put(wire::Writer& w, const UploadDone& m) { w.digest(m.sha); }
void put(wire::Writer& w, const Load& m) {
  w.u64(m.job);
  w.str(m.node);
  w.u32(m.inflight);
  w.u32(static_cast<std::uint32_t>(m.peers.size()));
  for (const PeerAddress& peer : m.peers) {
    w.str(peer.name);
    w.str(peer.address);
  }
  w.u32(static_cast<std::uint32_t>(m.fragments.size()));
  for (const FragmentAssignment& fragment : m.fragments) {
    w.u32(fragment.slot);
    w.digest(fragment.sha);
    w.str(fragment.name);
    w.u32(static_cast<std::uint32_t>(fragment.outputs.size()));
    for (const auto& destinations : fragment.outputs) {
      w.u32(static_cast<std::uint32_t>(destinations.size()));
      for (const Destination& d : destinations) {
        w.u32(d.index);
        w.u32(static_cast<std::uint32_t>(d.replicas.size()));
        for (const Target& t : d.replicas) {
          w.str(t.node);
          w.u32(t.slot);
        }
      }
    }
  }
  w.u64(m.link_bits_per_s);
  w.u32(m.link_latency_us);
}
void put(wire::Writer& w, const Loaded& m) {
  w.u64(m.job);
  w.u32(m.runner_batch);
}
void put(wire::Writer& w, const Unload& m) { w.u64(m.job); }
void put(wire::Writer&, const Shutdown&) {}
void put_tensor(wire::Writer& w, std::uint64_t job, std::uint64_t frame, std::uint32_t slot,
                std::uint32_t index, const QTensor& t) {
  w.u64(job);
  w.u64(frame);
  w.u32(slot);
  w.u32(index);
  w.i32(t.fix_point);
  w.u8(t.computed ? 0 : kTensorNotComputed);
  w.str(t.name);
  w.u8(static_cast<std::uint8_t>(t.shape.size()));
  for (std::int64_t dim : t.shape) w.i64(dim);
}
void put(wire::Writer& w, const TensorMsg& m) {
  put_tensor(w, m.job, m.frame, m.slot, m.index, m.tensor);
}
void put(wire::Writer& w, const FrameError& m) {
  w.u64(m.job);
  w.u64(m.frame);
  w.u16(static_cast<std::uint16_t>(m.code));
  w.str(m.node);
  w.str(m.message);
}
void put(wire::Writer& w, const StatsRequest& m) { w.u64(m.job); }
void put(wire::Writer& w, const Stats& m) {
  w.u64(m.job);
  w.u32(static_cast<std::uint32_t>(m.fragments.size()));
  for (const FragmentStats& f : m.fragments) {
    w.u32(f.slot);
    w.u64(f.frames);
    w.u64(f.busy_ns);
    w.u32(f.max_queue);
    w.u64(f.cpu_ns);
  }
  w.u64(m.tensor_bytes_sent);
  w.u64(m.upload_bytes_received);
  w.u64(m.cpu_ns);
}

// Writes the header with a placeholder meta size, then the metadata, then patches it.
template <class Fill>
std::vector<std::uint8_t> make_head(MessageType type, std::uint64_t payload_bytes, Fill fill) {
  std::vector<std::uint8_t> out;
  out.reserve(64);
  wire::Writer w(out);
  w.u32(kMagic);
  w.u16(static_cast<std::uint16_t>(type));
  w.u16(0);
  w.u32(0);
  w.u64(payload_bytes);
  fill(w);
  const auto meta = static_cast<std::uint32_t>(out.size() - kHeaderBytes);
  for (int i = 0; i < 4; ++i)
    out[8 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(meta >> (8 * i));
  return out;
}

// --- metadata readers ---
[[noreturn]] void malformed(const std::string& what) {
  throw ProtocolError(ErrorCode::kMalformed, what);
}

Hello get_hello(wire::Reader& r) {
  Hello m;
  // The version comes first in every protocol version, so a mismatch is reported as such
  // even when the rest of the message has another shape.
  m.version = r.u16("hello.version");
  if (m.version != kProtocolVersion)
    throw ProtocolError(ErrorCode::kVersionMismatch,
                        "peer speaks protocol version " + std::to_string(m.version) +
                            ", this build speaks " + std::to_string(kProtocolVersion));
  const std::uint8_t role = r.u8("hello.role");
  if (role != static_cast<std::uint8_t>(PeerRole::kOrchestrator) &&
      role != static_cast<std::uint8_t>(PeerRole::kWorker))
    malformed("hello.role " + std::to_string(role) + " is neither orchestrator (1) nor worker (2)");
  m.role = static_cast<PeerRole>(role);
  m.name = r.str("hello.name");
  m.nonce = r.digest("hello.nonce");
  m.heartbeat_ms = r.u32("hello.heartbeat_ms");
  return m;
}
Challenge get_challenge(wire::Reader& r) {
  Challenge m;
  m.version = r.u16("challenge.version");
  if (m.version != kProtocolVersion)
    throw ProtocolError(ErrorCode::kVersionMismatch,
                        "worker speaks protocol version " + std::to_string(m.version) +
                            ", this build speaks " + std::to_string(kProtocolVersion));
  m.name = r.str("challenge.name");
  m.nonce = r.digest("challenge.nonce");
  return m;
}
ErrorMsg get_error(wire::Reader& r) {
  ErrorMsg m;
  m.code = static_cast<ErrorCode>(r.u16("error.code"));
  m.frame = r.u64("error.frame");
  m.message = r.str("error.message", kMaxMessageText);
  return m;
}
HaveQuery get_have_query(wire::Reader& r) {
  HaveQuery m;
  const std::uint32_t n = r.count("have_query.count", kDigestBytes);
  m.hashes.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) m.hashes.push_back(r.digest("have_query.sha256"));
  return m;
}
HaveReply get_have_reply(wire::Reader& r) {
  HaveReply m;
  const std::uint32_t n = r.count("have_reply.count", 1);
  m.have.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint8_t have = r.u8("have_reply.have");
    if (have > 1) malformed("have_reply.have value " + std::to_string(have) + " is not 0 or 1");
    m.have.push_back(have);
  }
  return m;
}
UploadChunk get_upload(wire::Reader& r, std::uint64_t payload_bytes) {
  UploadChunk m;
  m.sha = r.digest("upload.sha256");
  m.total_bytes = r.u64("upload.total_bytes");
  m.offset = r.u64("upload.offset");
  if (m.total_bytes > kMaxUploadBytes)
    throw ProtocolError(ErrorCode::kFrameTooLarge,
                        "upload of " + std::to_string(m.total_bytes) + " bytes is too large");
  if (m.offset > m.total_bytes || payload_bytes > m.total_bytes - m.offset)
    malformed("upload chunk at offset " + std::to_string(m.offset) + " with " +
              std::to_string(payload_bytes) + " bytes overruns the " +
              std::to_string(m.total_bytes) + "-byte fragment");
  if (payload_bytes == 0 && m.total_bytes != 0) malformed("empty upload chunk");
  return m;
}
Destination get_destination(wire::Reader& r) {
  Destination d;
  d.index = r.u32("load.destination.index");
  const std::uint32_t replicas = r.count("load.destination.replicas", 8);
  if (replicas == 0) malformed("load.destination has no replicas");
  d.replicas.reserve(replicas);
  for (std::uint32_t i = 0; i < replicas; ++i) {
    Target t;
    t.node = r.str("load.destination.node");
    t.slot = r.u32("load.destination.slot");
    if (t.node.empty() != (t.slot == kOrchestratorSlot))
      malformed("load.destination: an empty node must go with the orchestrator slot and back");
    d.replicas.push_back(std::move(t));
  }
  return d;
}
Load get_load(wire::Reader& r) {
  Load m;
  m.job = r.u64("load.job");
  m.node = r.str("load.node");
  m.inflight = r.u32("load.inflight");
  if (m.inflight == 0) malformed("load.inflight is 0");
  const std::uint32_t peers = r.count("load.peers", 8);
  m.peers.reserve(peers);
  for (std::uint32_t i = 0; i < peers; ++i) {
    PeerAddress peer;
    peer.name = r.str("load.peer.name");
    peer.address = r.str("load.peer.address");
    m.peers.push_back(std::move(peer));
  }
  const std::uint32_t fragments = r.count("load.fragments", 4 + kDigestBytes + 4 + 4);
  m.fragments.reserve(fragments);
  for (std::uint32_t i = 0; i < fragments; ++i) {
    FragmentAssignment f;
    f.slot = r.u32("load.fragment.slot");
    if (f.slot == kOrchestratorSlot) malformed("load.fragment.slot is the orchestrator slot");
    f.sha = r.digest("load.fragment.sha256");
    f.name = r.str("load.fragment.name");
    const std::uint32_t outputs = r.count("load.fragment.outputs", 4);
    f.outputs.resize(outputs);
    for (auto& destinations : f.outputs) {
      const std::uint32_t n = r.count("load.fragment.destinations", 16);
      destinations.reserve(n);
      for (std::uint32_t k = 0; k < n; ++k) destinations.push_back(get_destination(r));
    }
    m.fragments.push_back(std::move(f));
  }
  m.link_bits_per_s = r.u64("load.link_bits_per_s");
  m.link_latency_us = r.u32("load.link_latency_us");
  return m;
}
TensorMsg get_tensor(wire::Reader& r, std::uint64_t payload_bytes, const Limits& limits) {
  TensorMsg m;
  m.job = r.u64("tensor.job");
  m.frame = r.u64("tensor.frame");
  m.slot = r.u32("tensor.slot");
  m.index = r.u32("tensor.index");
  m.tensor.fix_point = r.i32("tensor.fix_point");
  if (m.tensor.fix_point < -kMaxFixPoint || m.tensor.fix_point > kMaxFixPoint)
    malformed("tensor.fix_point " + std::to_string(m.tensor.fix_point) + " out of range");
  const std::uint8_t flags = r.u8("tensor.flags");
  if ((flags & ~kTensorNotComputed) != 0)
    malformed("tensor.flags " + std::to_string(flags) + " sets unknown bits");
  m.tensor.computed = (flags & kTensorNotComputed) == 0;
  m.tensor.name = r.str("tensor.name");
  const std::uint8_t rank = r.u8("tensor.rank");
  if (rank > kMaxTensorRank) malformed("tensor.rank " + std::to_string(rank) + " exceeds 8");
  std::uint64_t elements = 1;
  m.tensor.shape.reserve(rank);
  for (std::uint8_t i = 0; i < rank; ++i) {
    const std::int64_t dim = r.i64("tensor.shape");
    if (dim < 0) malformed("tensor '" + m.tensor.name + "' has a negative dimension");
    const auto udim = static_cast<std::uint64_t>(dim);
    if (udim != 0 && elements > limits.max_payload_bytes / udim)
      throw ProtocolError(ErrorCode::kFrameTooLarge,
                          "tensor '" + m.tensor.name + "' is larger than the frame limit");
    elements *= udim;
    m.tensor.shape.push_back(dim);
  }
  if (elements != payload_bytes)
    malformed("tensor '" + m.tensor.name + "' has " + std::to_string(elements) +
              " elements but the frame carries " + std::to_string(payload_bytes) + " bytes");
  return m;
}
FrameError get_frame_error(wire::Reader& r) {
  FrameError m;
  m.job = r.u64("frame_error.job");
  m.frame = r.u64("frame_error.frame");
  m.code = static_cast<ErrorCode>(r.u16("frame_error.code"));
  m.node = r.str("frame_error.node");
  m.message = r.str("frame_error.message", kMaxMessageText);
  return m;
}
Stats get_stats(wire::Reader& r) {
  Stats m;
  m.job = r.u64("stats.job");
  const std::uint32_t n = r.count("stats.fragments", 32);
  m.fragments.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    FragmentStats f;
    f.slot = r.u32("stats.fragment.slot");
    f.frames = r.u64("stats.fragment.frames");
    f.busy_ns = r.u64("stats.fragment.busy_ns");
    f.max_queue = r.u32("stats.fragment.max_queue");
    f.cpu_ns = r.u64("stats.fragment.cpu_ns");
    m.fragments.push_back(f);
  }
  m.tensor_bytes_sent = r.u64("stats.tensor_bytes_sent");
  m.upload_bytes_received = r.u64("stats.upload_bytes_received");
  m.cpu_ns = r.u64("stats.cpu_ns");
  return m;
}

AuthOk get_auth_ok(wire::Reader& r) {
  AuthOk m;
  m.mac = r.digest("auth_ok.mac");
  m.backend = r.str("auth_ok.backend");
  m.dpu_fingerprint = r.u64("auth_ok.dpu_fingerprint");
  m.dpu_batch = r.u32("auth_ok.dpu_batch");
  return m;
}

// --- the protocol's one table ---
// A row per message type: its name, whether it may come before authentication (the
// handshake), whether bytes follow its metadata, and how its metadata decodes. Adding a
// message: its struct (with kType) in the Message variant, its put() and getter above, and
// its row here; the static_assert below holds the table and the variant together.
using Decode = Message (*)(wire::Reader&, const FrameHeader&, const Limits&);
struct MessageKind {
  MessageType type;
  std::string_view name;
  bool before_auth;
  bool has_payload;
  Decode decode;
};

constexpr MessageKind kKinds[] = {
    {MessageType::kHello, "HELLO", true, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message { return get_hello(r); }},
    {MessageType::kChallenge, "CHALLENGE", true, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return get_challenge(r);
     }},
    {MessageType::kAuth, "AUTH", true, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return Auth{r.digest("auth.mac")};
     }},
    {MessageType::kAuthOk, "AUTH_OK", true, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message { return get_auth_ok(r); }},
    {MessageType::kError, "ERROR", true, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message { return get_error(r); }},
    {MessageType::kHeartbeat, "HEARTBEAT", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return Heartbeat{r.u64("heartbeat.sequence")};
     }},
    {MessageType::kHaveQuery, "HAVE_QUERY", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return get_have_query(r);
     }},
    {MessageType::kHaveReply, "HAVE_REPLY", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return get_have_reply(r);
     }},
    {MessageType::kUploadChunk, "UPLOAD_CHUNK", false, true,
     [](wire::Reader& r, const FrameHeader& h, const Limits&) -> Message {
       return get_upload(r, h.payload_bytes);
     }},
    {MessageType::kUploadDone, "UPLOAD_DONE", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return UploadDone{r.digest("upload_done.sha256")};
     }},
    {MessageType::kLoad, "LOAD", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message { return get_load(r); }},
    {MessageType::kLoaded, "LOADED", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       Loaded m;
       m.job = r.u64("loaded.job");
       m.runner_batch = r.u32("loaded.runner_batch");
       return m;
     }},
    {MessageType::kUnload, "UNLOAD", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return Unload{r.u64("unload.job")};
     }},
    {MessageType::kShutdown, "SHUTDOWN", false, false,
     [](wire::Reader&, const FrameHeader&, const Limits&) -> Message { return Shutdown{}; }},
    {MessageType::kTensor, "TENSOR", false, true,
     [](wire::Reader& r, const FrameHeader& h, const Limits& limits) -> Message {
       return get_tensor(r, h.payload_bytes, limits);
     }},
    {MessageType::kFrameError, "FRAME_ERROR", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return get_frame_error(r);
     }},
    {MessageType::kStatsRequest, "STATS_REQUEST", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message {
       return StatsRequest{r.u64("stats_request.job")};
     }},
    {MessageType::kStats, "STATS", false, false,
     [](wire::Reader& r, const FrameHeader&, const Limits&) -> Message { return get_stats(r); }},
};

constexpr const MessageKind* find_kind(MessageType type) {
  for (const MessageKind& kind : kKinds)
    if (kind.type == type) return &kind;
  return nullptr;
}

template <std::size_t... I>
constexpr bool every_message_has_one_row(std::index_sequence<I...>) {
  return ((find_kind(std::variant_alternative_t<I, Message>::kType) != nullptr) && ...) &&
         std::size(kKinds) == sizeof...(I);
}
static_assert(every_message_has_one_row(std::make_index_sequence<std::variant_size_v<Message>>{}),
              "every alternative of Message needs exactly one row in kKinds");

const MessageKind& kind_of(MessageType type) {
  const MessageKind* kind = find_kind(type);
  if (kind == nullptr) throw ProtocolError(ErrorCode::kUnknownType, "unknown message type");
  return *kind;
}

}  // namespace

std::string_view message_type_name(MessageType type) {
  const MessageKind* kind = find_kind(type);
  return kind != nullptr ? kind->name : "UNKNOWN";
}

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kMalformed:
      return "malformed";
    case ErrorCode::kVersionMismatch:
      return "version_mismatch";
    case ErrorCode::kAuthFailed:
      return "auth_failed";
    case ErrorCode::kFrameTooLarge:
      return "frame_too_large";
    case ErrorCode::kUnknownType:
      return "unknown_type";
    case ErrorCode::kUnexpectedMessage:
      return "unexpected_message";
    case ErrorCode::kBadFragment:
      return "bad_fragment";
    case ErrorCode::kNoSuchJob:
      return "no_such_job";
    case ErrorCode::kQueueFull:
      return "queue_full";
    case ErrorCode::kComputeFailed:
      return "compute_failed";
    case ErrorCode::kPeerLost:
      return "peer_lost";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kShuttingDown:
      return "shutting_down";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kDeviceFailed:
      return "device_failed";
  }
  return "unknown";
}

bool is_known_message_type(std::uint16_t type) {
  return find_kind(static_cast<MessageType>(type)) != nullptr;
}

MessageType type_of(const Message& message) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kType; }, message);
}

std::vector<std::uint8_t> encode_head(const Message& message) {
  return std::visit(
      [&](const auto& m) {
        std::uint64_t payload = 0;
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, TensorMsg>) payload = m.tensor.data.size();
        if constexpr (std::is_same_v<M, UploadChunk>) payload = m.bytes.size();
        return make_head(type_of(message), payload, [&](wire::Writer& w) { put(w, m); });
      },
      message);
}

std::vector<std::uint8_t> encode_tensor_head(std::uint64_t job, std::uint64_t frame,
                                             std::uint32_t slot, std::uint32_t index,
                                             const QTensor& tensor) {
  return make_head(MessageType::kTensor, tensor.data.size(),
                   [&](wire::Writer& w) { put_tensor(w, job, frame, slot, index, tensor); });
}

std::vector<std::uint8_t> encode_upload_head(const Digest& sha, std::uint64_t total_bytes,
                                             std::uint64_t offset, std::uint64_t chunk_bytes) {
  return make_head(MessageType::kUploadChunk, chunk_bytes,
                   [&](wire::Writer& w) { put_upload(w, sha, total_bytes, offset); });
}

std::vector<std::uint8_t> encode_frame(const Message& message) {
  std::vector<std::uint8_t> out = encode_head(message);
  if (const auto* t = std::get_if<TensorMsg>(&message)) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(t->tensor.data.data());
    out.insert(out.end(), bytes, bytes + t->tensor.data.size());
  } else if (const auto* c = std::get_if<UploadChunk>(&message)) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(c->bytes.data());
    out.insert(out.end(), bytes, bytes + c->bytes.size());
  }
  return out;
}

FrameHeader parse_header(std::span<const std::uint8_t> bytes, const Limits& limits,
                         bool authenticated) {
  if (bytes.size() < kHeaderBytes)
    throw ProtocolError(ErrorCode::kMalformed,
                        "frame header truncated at " + std::to_string(bytes.size()) + " bytes");
  wire::Reader r(bytes.first(kHeaderBytes));
  const std::uint32_t magic = r.u32("magic");
  if (magic != kMagic)
    throw ProtocolError(ErrorCode::kMalformed, "bad magic, not a dpushard frame");
  const std::uint16_t type = r.u16("type");
  const std::uint16_t flags = r.u16("flags");
  FrameHeader h;
  h.meta_bytes = r.u32("meta_bytes");
  h.payload_bytes = r.u64("payload_bytes");
  if (!is_known_message_type(type))
    throw ProtocolError(ErrorCode::kUnknownType, "unknown message type " + std::to_string(type));
  h.type = static_cast<MessageType>(type);
  if (flags != 0)
    throw ProtocolError(ErrorCode::kMalformed,
                        "reserved header flags are " + std::to_string(flags) + ", must be 0");
  if (!authenticated && !kind_of(h.type).before_auth)
    throw ProtocolError(ErrorCode::kUnexpectedMessage,
                        std::string(message_type_name(h.type)) + " before authentication");
  const std::uint32_t max_meta = authenticated ? limits.max_meta_bytes : kHandshakeMaxMetaBytes;
  if (h.meta_bytes > max_meta)
    throw ProtocolError(ErrorCode::kFrameTooLarge,
                        std::string(message_type_name(h.type)) + " metadata of " +
                            std::to_string(h.meta_bytes) + " bytes exceeds the limit " +
                            std::to_string(max_meta));
  if (h.payload_bytes > 0 && !kind_of(h.type).has_payload)
    throw ProtocolError(ErrorCode::kMalformed,
                        std::string(message_type_name(h.type)) + " carries no payload");
  if (h.payload_bytes > limits.max_payload_bytes)
    throw ProtocolError(ErrorCode::kFrameTooLarge,
                        std::string(message_type_name(h.type)) + " payload of " +
                            std::to_string(h.payload_bytes) + " bytes exceeds the limit " +
                            std::to_string(limits.max_payload_bytes));
  return h;
}

Message decode_meta(const FrameHeader& header, std::span<const std::uint8_t> meta,
                    const Limits& limits) {
  if (meta.size() != header.meta_bytes)
    throw ProtocolError(ErrorCode::kMalformed, "metadata size differs from the header");
  wire::Reader r(meta);
  Message message = kind_of(header.type).decode(r, header, limits);
  r.expect_end(std::string(message_type_name(header.type)).c_str());
  return message;
}

std::vector<std::int8_t>* payload_target(Message& message) {
  if (auto* t = std::get_if<TensorMsg>(&message)) return &t->tensor.data;
  if (auto* c = std::get_if<UploadChunk>(&message)) return &c->bytes;
  return nullptr;
}

Message decode_frame(std::span<const std::uint8_t> bytes, const Limits& limits,
                     bool authenticated) {
  const FrameHeader h = parse_header(bytes, limits, authenticated);
  const std::uint64_t expected = kHeaderBytes + std::uint64_t{h.meta_bytes} + h.payload_bytes;
  if (bytes.size() != expected)
    throw ProtocolError(ErrorCode::kMalformed, "frame is " + std::to_string(bytes.size()) +
                                                   " bytes, its header says " +
                                                   std::to_string(expected));
  Message message = decode_meta(h, bytes.subspan(kHeaderBytes, h.meta_bytes), limits);
  if (std::vector<std::int8_t>* target = payload_target(message)) {
    const auto payload = bytes.subspan(kHeaderBytes + h.meta_bytes);
    target->assign(reinterpret_cast<const std::int8_t*>(payload.data()),
                   reinterpret_cast<const std::int8_t*>(payload.data()) + payload.size());
  }
  return message;
}

}  // namespace dpushard::net

#pragma once
// The one link model of dpushard: what Gigabit Ethernet between KV260 boards carries. The
// planner's cost models (split.hpp: RooflineParams, TimingCostParams) price a transfer with
// it, and the emulated link (core/include/dpushard/net/link_shaper.hpp) paces every port with it,
// so a plan's predicted transfer time and the emulation's are the same number.
//
// Framing per TCP segment on a standard 1500-byte MTU (VITIS_AI.md section 5: "1 GbE
// goodput is at most about 118.7 MB/s: 1460 payload bytes per 1538 on the wire"):
//   payload (MSS)              1460 = 1500 MTU - 20 IPv4 header - 20 TCP header
//   on the wire                1538 = 1500 MTU + 14 Ethernet header + 4 FCS
//                                     + 8 preamble and start-of-frame + 12 inter-frame gap
// so the wire carries 1538 / 1460 bytes for every payload byte (TCP options and ACKs in the
// other direction are left out). The one-way latency is what the planner has always
// assumed per transfer (0.1 ms: a switch hop and the two network stacks of a board).

#include <chrono>
#include <cstdint>

namespace dpushard::ethernet {

inline constexpr double kMtuBytes = 1500;
inline constexpr double kIpv4HeaderBytes = 20;
inline constexpr double kTcpHeaderBytes = 20;
inline constexpr double kEthernetHeaderBytes = 14;
inline constexpr double kFcsBytes = 4;
inline constexpr double kPreambleBytes = 8;
inline constexpr double kInterFrameGapBytes = 12;

// TCP payload per segment (1460) and the bytes that segment occupies on the wire (1538).
inline constexpr double kPayloadPerSegment = kMtuBytes - kIpv4HeaderBytes - kTcpHeaderBytes;
inline constexpr double kWirePerSegment =
    kMtuBytes + kEthernetHeaderBytes + kFcsBytes + kPreambleBytes + kInterFrameGapBytes;
// Payload bytes per wire byte: 1460 / 1538, about 0.949.
inline constexpr double kPayloadEfficiency = kPayloadPerSegment / kWirePerSegment;

// One-way latency per transfer, as the planner prices it and the emulation adds it.
inline constexpr double kOneWayLatencyMs = 0.1;
inline constexpr std::chrono::microseconds kOneWayLatency{100};
static_assert(kOneWayLatency.count() == static_cast<long long>(kOneWayLatencyMs * 1000));

// The line rate the cluster is built for (Gbit/s).
inline constexpr double kLineRateGbps = 1.0;

// Seconds `payload_bytes` of TCP payload occupy a port of `line_bits_per_s`.
inline constexpr double wire_seconds(double payload_bytes, double line_bits_per_s) {
  return payload_bytes / kPayloadEfficiency * 8.0 / line_bits_per_s;
}

static_assert(kPayloadPerSegment == 1460 && kWirePerSegment == 1538);

}  // namespace dpushard::ethernet

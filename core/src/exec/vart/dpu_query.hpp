#pragma once
// Which DPU a `vart` worker runs on, for its handshake (docs/protocol.md, AUTH_OK).
//
// On a board the DPU is whatever firmware is loaded, and VART's runner interface has no call
// that names it without a model: `xdputil query` (Vitis AI's board tool, which the `kria`
// role runs as well) prints it as JSON, a "kernels" list with one object per DPU core
// holding "fingerprint" (a hex string, the value a compiled subgraph's `dpu_fingerprint`
// must equal) and, where the IP has one, "DPU Batch". query_dpu() runs it; the VART double
// (tests/vart/double) defines query_dpu() instead, from its settings.

#include <string>

#include "dpushard/exec/backend.hpp"

namespace dpushard::vart_detail {

// Parses `xdputil query`'s output (log lines before the JSON are skipped). Every core must
// report the same fingerprint (one DPU design per board). Throws dpushard::Error with one
// line when there is no JSON, no core or no fingerprint. The batch is 0 when not reported.
DeviceInfo parse_xdputil_query(const std::string& text);

// The DPU of this machine. Throws dpushard::Error saying what is missing.
DeviceInfo query_dpu();

}  // namespace dpushard::vart_detail

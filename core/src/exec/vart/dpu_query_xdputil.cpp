// query_dpu() on a board: runs `xdputil query` (dpu_query.hpp).

#include <cstdio>
#include <memory>

#include "dpu_query.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard::vart_detail {

DeviceInfo query_dpu() {
  // Once, when the worker starts, before its threads; stderr stays the worker's log.
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen("xdputil query", "r"), &::pclose);
  if (!pipe) throw Error("vart: cannot run 'xdputil query' to read the DPU's fingerprint");
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0;)
    text.append(buffer, n);
  const int status = ::pclose(pipe.release());
  if (status != 0)
    throw Error("vart: 'xdputil query' failed (exit status " + std::to_string(status) +
                "): is Vitis AI's runtime installed and the DPU firmware loaded? (docs/boards.md)");
  return parse_xdputil_query(text);
}

}  // namespace dpushard::vart_detail

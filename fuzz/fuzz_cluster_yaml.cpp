// libFuzzer target: the cluster.yaml reader (parse_cluster_config). Bad input must end in
// dpushard::Error; anything else (a crash, a sanitizer report, another exception) is a bug.
// A token_file in the input is resolved under a folder that does not exist, so the fuzzer
// never reads the machine's files (absolute paths are refused by the check below).

#include <cstdint>
#include <string>
#include <utility>

#include "dpushard/base/error.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/backend.hpp"

namespace {
void describe(const char* name) {
  dpushard::BackendDescriptor described;
  described.name = name;
  described.not_built = "not linked into the fuzzer";
  dpushard::register_backend(std::move(described));
}
}  // namespace

// The registry knows ref and vart by itself; sim and cpu, which this fuzzer does not link,
// are described (no factory) so that inputs naming them parse on.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  describe("sim");
  describe("cpu");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // An absolute token_file would be opened as given: keep the fuzzer off real files.
  if (text.find("token_file") != std::string::npos && text.find('/') != std::string::npos) return 0;
  try {
    (void)dpushard::cluster::parse_cluster_config(text, "fuzz/cluster.yaml",
                                                  "/nonexistent/dpushard-fuzz");
  } catch (const dpushard::Error&) {
  }
  return 0;
}

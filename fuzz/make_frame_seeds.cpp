// Writes one well-formed frame of every protocol message type into a folder: the seed
// corpus of fuzz_frame_decoder (fuzz/run.sh), built from the codec itself so the seeds
// follow the protocol whenever it changes.
//   make_frame_seeds DIR

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dpushard/net/protocol.hpp"

namespace {

using namespace dpushard;
using namespace dpushard::net;

Digest digest_of(std::uint8_t seed) {
  Digest d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(seed + i);
  return d;
}

std::vector<Message> one_of_each() {
  QTensor tensor;
  tensor.name = "t";
  tensor.shape = {1, 2, 2, 3};
  tensor.fix_point = 4;
  tensor.data = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12};
  QTensor not_computed = tensor;
  not_computed.computed = false;
  Destination to_worker{{{"w1", 2}, {"w2", 3}}, 0};
  Destination to_orchestrator{{{"", kOrchestratorSlot}}, 1};
  return {
      Hello{kProtocolVersion, PeerRole::kOrchestrator, "orchestrator", digest_of(1)},
      Hello{kProtocolVersion, PeerRole::kWorker, "w0", digest_of(2)},
      Challenge{kProtocolVersion, "w1", digest_of(3)},
      Auth{digest_of(4)},
      AuthOk{digest_of(5), "vart", 0x101000016010407ULL, 1},
      ErrorMsg{ErrorCode::kQueueFull, 7, "queue full"},
      Heartbeat{42},
      HaveQuery{{digest_of(6), digest_of(7)}},
      HaveReply{{1, 0}},
      UploadChunk{digest_of(8), 10, 2, {1, 2, 3, 4}},
      UploadDone{digest_of(8)},
      Load{9,
           "w0",
           3,
           {{"w1", "127.0.0.1:7001"}, {"w2", "127.0.0.1:7002"}},
           {{0, digest_of(9), "stem", {{to_worker}, {to_orchestrator}}}}},
      Loaded{9},
      Unload{9},
      Shutdown{},
      TensorMsg{9, 5, 2, 0, tensor},
      TensorMsg{9, 6, kOrchestratorSlot, 1, not_computed},
      FrameError{9, 5, ErrorCode::kComputeFailed, "w1", "backend threw"},
      StatsRequest{9},
      Stats{9, {{0, 10, 123456, 2, 1000}, {1, 10, 654321, 1, 2000}}, 4096, 8192, 5000},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_frame_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int i = 0;
  for (const Message& message : one_of_each()) {
    const std::vector<std::uint8_t> frame = encode_frame(message);
    const auto path = dir / ("seed-" + std::to_string(i++) + "-" +
                             std::string(message_type_name(type_of(message))));
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(frame.data()),
              static_cast<std::streamsize>(frame.size()));
    if (!out) {
      std::fprintf(stderr, "make_frame_seeds: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::printf("make_frame_seeds: %d frames in %s\n", i, dir.c_str());
  return 0;
}

// A worker serving a compiled fragment on the vart backend over the VART double, whose DPU
// process aborts or hangs on one frame: the orchestrator gets one FRAME_ERROR with the code
// COMPUTE_FAILED naming the node, the fragment and the frame, and every other frame is
// computed, byte for byte as `ref` computes it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <variant>

#include "compile_equivalent.hpp"
#include "double/vart_double.hpp"
#include "dpushard/vart_backend.hpp"
#include "net/test_client.hpp"

namespace dpushard::net::testing {
namespace {

using ::testing::HasSubstr;
using vart_double::FaultKind;

constexpr std::uint64_t kJob = 0xD00D;

void serve_through_a_failure(FaultKind fault, const std::string& what) {
  SCOPED_TRACE(what);
  register_vart_backend();
  vart_double::clear_journal();
  const Graph int_graph = tiny_conv("a", 3, 4, 8, 3, 1);
  const Graph compiled = vart_test::compile_equivalent(int_graph);
  vart_double::Settings settings;
  settings.int_graph = int_graph;
  settings.fault = fault;
  settings.fault_job = 2;  // the DPU process's second frame
  vart_double::set_settings(settings);

  const auto cache = fresh_dir("vart-worker");
  WorkerOptions options = test_worker_options(cache);
  options.backend = "vart";
  options.peer_timeout = 20000ms;  // the hang takes a budget's worth of time
  WorkerThread w(options);
  TestClient client(w.port());
  EXPECT_EQ(client.handshake("secret"), "vart");
  const std::string bytes = serialize_xmodel(compiled);
  upload(client, bytes);
  Load load;
  load.job = kJob;
  load.node = "board0";
  load.inflight = 4;
  load.fragments = {FragmentAssignment{0, sha_of(bytes), "stem", {{Destination{{Target{}}, 0}}}}};
  client.send(load);
  EXPECT_EQ(std::get<Loaded>(client.expect(20000ms)).job, kJob);

  auto ref = make_backend("ref");
  ref->load(int_graph);
  const QTensor ref_spec = input_specs(int_graph)[0];
  const QTensor spec = input_specs(compiled)[0];
  std::map<std::uint64_t, std::vector<std::int8_t>> expected;
  // Frame 1 is the first process's second job; frame 2 the new process's first.
  for (std::uint64_t frame = 0; frame < 3; ++frame) {
    QTensor input = random_qtensor(ref_spec.name, ref_spec.shape, ref_spec.fix_point, frame);
    expected[frame] = ref->run({input})[0].data;
    input.name = spec.name;
    client.send(TensorMsg{kJob, frame, 0, 0, input});
  }
  int errors = 0;
  std::map<std::uint64_t, bool> computed;
  for (int i = 0; i < 3; ++i) {
    const Message m = client.expect(20000ms);
    if (const auto* error = std::get_if<FrameError>(&m)) {
      ++errors;
      EXPECT_EQ(error->frame, 1u);  // the child's second frame
      EXPECT_EQ(error->code, ErrorCode::kDeviceFailed);
      EXPECT_EQ(error->node, "board0");
      EXPECT_THAT(error->message, HasSubstr("fragment 'stem' frame 1: vart: graph 'a': "));
      EXPECT_THAT(error->message, HasSubstr(what));
      EXPECT_THAT(error->message, HasSubstr("restarted it (restart 1)"));
      continue;
    }
    const auto& output = std::get<TensorMsg>(m);
    computed[output.frame] = true;
    EXPECT_EQ(output.tensor.data, expected.at(output.frame)) << "frame " << output.frame;
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(computed.size(), 2u);  // frames 0 and 2
  vart_double::clear_settings();
  std::filesystem::remove_all(cache);
}

TEST(VartWorker, AbortInTheDpuProcessCostsOneFrame) {
  serve_through_a_failure(FaultKind::Abort,
                          "the DPU process died during the frame (killed by "
                          "signal 6");
}

TEST(VartWorker, HangInTheDpuProcessCostsOneFrame) {
  // VART's own timeout (XLNX_DPU_TIMEOUT = the budget) ends the child.
  serve_through_a_failure(FaultKind::Hang,
                          "the DPU process died during the frame (killed by "
                          "signal 6");
}

TEST(VartWorker, StallInTheDpuProcessCostsOneFrame) {
  // A controller that never returns: the worker kills the child at budget + grace.
  serve_through_a_failure(FaultKind::Stall, "the frame exceeded its time budget of 2000 ms");
}

}  // namespace
}  // namespace dpushard::net::testing

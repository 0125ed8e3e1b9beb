// A worker serving a compiled fragment on the vart backend over the VART double, whose DPU
// process aborts or hangs on one frame: the orchestrator gets one FRAME_ERROR with the code
// COMPUTE_FAILED naming the node, the fragment and the frame, and every other frame is
// computed, byte for byte as `ref` computes it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <variant>

#include "compile_equivalent.hpp"
#include "double/vart_double.hpp"
#include "dpushard/exec/vart_backend.hpp"
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

// The processes whose parent is this one (the worker runs in a thread of this test): its
// DPU processes.
std::set<pid_t> children() {
  std::set<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long parent = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &parent) == 2 &&
        parent == ::getpid() && state != 'Z')
      found.insert(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

// Two fragments on one worker share one DPU process, whose frames go through it one at a
// time; the process aborts during one frame while the other fragment's frame waits for the
// DPU: one FRAME_ERROR (that frame), the waiting frame runs on the restarted process, which
// has both fragments loaded again.
TEST(VartWorker, TwoFragmentsShareOneDpuProcess) {
  register_vart_backend();
  const Graph int_a = tiny_conv("a", 3, 4, 8, 3, 1);
  const Graph int_b = tiny_conv("b", 5, 3, 4, 2, 2);
  const Graph compiled_a = vart_test::compile_equivalent(int_a);
  const Graph compiled_b = vart_test::compile_equivalent(int_b);
  const auto cache = fresh_dir("vart-worker-two");
  // The double computes each fragment with ref on its `_int` graph; the third DPU job of the
  // first process aborts, and no later one.
  vart_double::Settings settings;
  settings.int_graphs = {int_a, int_b};
  settings.fault = FaultKind::Abort;
  settings.fault_job = 3;
  settings.fault_marker = (cache / "fault-fired").string();
  vart_double::set_settings(settings);

  WorkerOptions options = test_worker_options(cache);
  options.backend = "vart";
  options.threads = 2;
  WorkerThread w(options);
  TestClient client(w.port());
  EXPECT_EQ(client.handshake("secret"), "vart");
  const std::string bytes_a = serialize_xmodel(compiled_a);
  const std::string bytes_b = serialize_xmodel(compiled_b);
  upload(client, bytes_a);
  upload(client, bytes_b);
  Load load;
  load.job = kJob;
  load.node = "board0";
  load.inflight = 4;
  load.fragments = {FragmentAssignment{0, sha_of(bytes_a), "fa", {{Destination{{Target{}}, 0}}}},
                    FragmentAssignment{1, sha_of(bytes_b), "fb", {{Destination{{Target{}}, 1}}}}};
  client.send(load);
  EXPECT_EQ(std::get<Loaded>(client.expect(20000ms)).job, kJob);
  const std::set<pid_t> first = children();
  EXPECT_EQ(first.size(), 1u) << "one DPU process for both fragments";

  auto ref_a = make_backend("ref");
  ref_a->load(int_a);
  auto ref_b = make_backend("ref");
  ref_b->load(int_b);
  // Frame f of fragment s (0: a, 1: b): its input on the wire and ref's output.
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::int8_t>> expected;
  const auto send = [&](std::uint32_t slot, std::uint64_t frame) {
    const Graph& g = slot == 0 ? int_a : int_b;
    const QTensor ref_spec = input_specs(g)[0];
    QTensor input = random_qtensor(ref_spec.name, ref_spec.shape, ref_spec.fix_point, frame + 10);
    expected[{slot, frame}] = (slot == 0 ? ref_a : ref_b)->run({input})[0].data;
    input.name = input_specs(slot == 0 ? compiled_a : compiled_b)[0].name;
    client.send(TensorMsg{kJob, frame, slot, 0, input});
  };
  int errors = 0;
  std::set<std::pair<std::uint32_t, std::uint64_t>> computed;
  const auto receive = [&](int messages) {
    for (int i = 0; i < messages; ++i) {
      const Message m = client.expect(20000ms);
      if (const auto* error = std::get_if<FrameError>(&m)) {
        ++errors;
        EXPECT_EQ(error->code, ErrorCode::kDeviceFailed);
        EXPECT_EQ(error->frame, 1u);
        EXPECT_THAT(error->message, HasSubstr("the DPU process died during the frame (killed by "
                                              "signal 6"));
        EXPECT_THAT(error->message, HasSubstr("restarted it (restart 1)"));
        continue;
      }
      const auto& output = std::get<TensorMsg>(m);
      const std::uint32_t slot = output.index;  // the plan output index: 0 from a, 1 from b
      computed.insert({slot, output.frame});
      EXPECT_EQ(output.tensor.data, expected.at({slot, output.frame}))
          << "fragment " << slot << " frame " << output.frame;
    }
  };
  send(0, 0);
  receive(1);
  send(1, 0);
  receive(1);  // jobs 1 and 2
  // Both in flight: the first to reach the DPU is its job 3 and aborts it, the other waits
  // for the DPU and runs on the new process.
  send(0, 1);
  send(1, 1);
  receive(2);
  EXPECT_EQ(errors, 1);
  const std::set<pid_t> second = children();
  EXPECT_EQ(second.size(), 1u);
  EXPECT_NE(second, first) << "the DPU process was restarted";
  // Both fragments are loaded in the new process.
  send(0, 2);
  receive(1);
  send(1, 2);
  receive(1);
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(computed.size(), 5u);
  EXPECT_TRUE(computed.count({0, 2}) == 1 && computed.count({1, 2}) == 1);
  EXPECT_EQ(children(), second);
  vart_double::clear_settings();
  std::filesystem::remove_all(cache);
}

}  // namespace
}  // namespace dpushard::net::testing

// What running VART in a supervised child process adds per frame (dpu_child.hpp): the same
// fragment on the VART double in this process and through the child, with a 150 KB input
// (1x224x224x3 int8) and output. Prints the mean and median per frame of each and the
// difference, which is the child's cost: shared-memory copies in and out, the round trip
// over the socket pair, and the child's own copies. Wall time includes the wake-ups of the
// child and of the caller, which a loaded machine stretches; the CPU time per frame (this
// process plus the child, from getrusage and /proc) is the work added, whatever the load.
// Not a ctest; run by hand:
//   build/rel/tests/vart/bench_vart_child [frames]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "compile_equivalent.hpp"
#include "double/vart_double.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/vart_backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "exec/vart/dpu_child.hpp"

namespace {

using namespace dpushard;

struct Timing {
  double mean_ms = 0;
  double median_ms = 0;
};

// Minor page faults so far of this process, and of `child` when positive (/proc/PID/stat):
// a buffer that gets fresh pages every frame shows here.
double minor_faults(pid_t child) {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  double faults = static_cast<double>(self.ru_minflt);
  if (child > 0) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 10 && fields >> field; ++i)
      if (i == 10) faults += std::stod(field);  // minflt
  }
  return faults;
}

// CPU seconds used so far by this process, and by `child` when positive (/proc/PID/stat).
double cpu_seconds(pid_t child) {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  double s = static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
             static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
  if (child > 0) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i)
      if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    s += ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return s;
}

// `in_place`: the zero-copy path (Backend::frame_memory), the inputs written there once, as
// by a caller that produces them in place; else run(), which copies them in and out.
Timing time_frames(Backend& backend, const std::vector<QTensor>& inputs, int frames,
                   bool in_place = false) {
  if (in_place)
    for (std::size_t i = 0; i < inputs.size(); ++i)
      std::copy(inputs[i].data.begin(), inputs[i].data.end(),
                backend.frame_memory()->inputs[i].begin());
  const auto one = [&] { in_place ? backend.run_in_place() : backend.run(inputs); };
  for (int i = 0; i < 20; ++i) one();  // warm up
  std::vector<double> ms;
  for (int i = 0; i < frames; ++i) {
    const auto start = std::chrono::steady_clock::now();
    one();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  Timing t;
  for (const double v : ms) t.mean_ms += v / static_cast<double>(frames);
  std::nth_element(ms.begin(), ms.begin() + frames / 2, ms.end());
  t.median_ms = ms[static_cast<std::size_t>(frames / 2)];
  return t;
}

// Runs the fragment in process and through the child, alternating rounds so that load on
// the machine hits both alike, and prints both and the difference.
void compare(const Graph& compiled, const std::vector<QTensor>& inputs, int frames,
             const char* title) {
  auto in_process = make_vart_backend_in_process({});
  in_process->load(compiled);
  auto supervised = make_vart_backend({});
  supervised->load(compiled);
  const pid_t child = dynamic_cast<vart_detail::SupervisedBackend&>(*supervised).child();
  Timing a{}, c{}, z{};
  double cpu_a = 0, cpu_c = 0, cpu_z = 0, faults_a = 0, faults_c = 0;
  const int rounds = 5;
  for (int r = 0; r < rounds; ++r) {
    const double before_z = cpu_seconds(child);
    const Timing tz = time_frames(*supervised, inputs, frames / rounds, true);
    cpu_z += cpu_seconds(child) - before_z;
    z.mean_ms += tz.mean_ms / rounds, z.median_ms += tz.median_ms / rounds;
    double before = cpu_seconds(0), faults_before = minor_faults(0);
    const Timing ta = time_frames(*in_process, inputs, frames / rounds);
    cpu_a += cpu_seconds(0) - before;
    faults_a += minor_faults(0) - faults_before;
    before = cpu_seconds(child), faults_before = minor_faults(child);
    const Timing tc = time_frames(*supervised, inputs, frames / rounds);
    cpu_c += cpu_seconds(child) - before;
    faults_c += minor_faults(child) - faults_before;
    a.mean_ms += ta.mean_ms / rounds, a.median_ms += ta.median_ms / rounds;
    c.mean_ms += tc.mean_ms / rounds, c.median_ms += tc.median_ms / rounds;
  }
  std::printf("-- %s: input %zu bytes, output %zu bytes, %d frames each\n", title,
              inputs[0].data.size(), inputs[0].data.size(), frames);
  std::printf("in process : mean %.4f ms  median %.4f ms per frame\n", a.mean_ms, a.median_ms);
  std::printf("child      : mean %.4f ms  median %.4f ms per frame\n", c.mean_ms, c.median_ms);
  std::printf("child cost : mean %.4f ms  median %.4f ms per frame (wall)\n", c.mean_ms - a.mean_ms,
              c.median_ms - a.median_ms);
  std::printf("in place   : mean %.4f ms  median %.4f ms per frame (child, frame_memory())\n",
              z.mean_ms, z.median_ms);
  std::printf("in place cost: mean %.4f ms  median %.4f ms per frame (wall)\n",
              z.mean_ms - a.mean_ms, z.median_ms - a.median_ms);
  const double per_frame = 1000.0 / (frames / rounds * rounds + 20 * rounds);  // ms per s
  std::printf(
      "cpu time   : in process %.4f ms, child + caller %.4f ms (in place %.4f ms) per frame; "
      "added %.4f ms (in place %.4f ms) (target < 0.1 ms)\n",
      cpu_a * per_frame, cpu_c * per_frame, cpu_z * per_frame, (cpu_c - cpu_a) * per_frame,
      (cpu_z - cpu_a) * per_frame);
  const double per_frame_count = 1.0 / (frames / rounds * rounds + 20 * rounds);
  std::printf("page faults: in process %.1f, child + caller %.1f per frame\n",
              faults_a * per_frame_count, faults_c * per_frame_count);
}

}  // namespace

int main(int argc, char** argv) {
  // The DPU process is this program's own executable run as `dpu-child` (dpu_child.hpp).
  if (argc >= 2 && std::string_view(argv[1]) == "dpu-child")
    return dpushard::run_dpu_child(argc, argv);
  const int frames = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2000;
  GraphBuilder b("relu224");
  b.relu("act", b.input("x", {1, 224, 224, 3}, 5), 5);
  const Graph int_graph = b.finish();
  const Graph compiled = vart_test::compile_equivalent(int_graph);
  const QTensor spec = input_specs(compiled).at(0);
  const std::vector<QTensor> inputs{random_qtensor(spec.name, spec.shape, spec.fix_point, 1)};
  if (std::FILE* load = std::fopen("/proc/loadavg", "r")) {
    char text[128] = {};
    if (std::fgets(text, sizeof text, load) != nullptr) std::printf("loadavg: %s", text);
    std::fclose(load);
  }
  vart_double::Settings settings;
  settings.int_graph = int_graph;
  // The DPU taking no time: the difference is all the child's (copies, wake-ups).
  settings.null_jobs = true;
  vart_double::set_settings(settings);
  compare(compiled, inputs, frames, "a DPU that takes no time");
  // The double computing the frame (ref's relu over 150 KB).
  settings.null_jobs = false;
  vart_double::set_settings(settings);
  compare(compiled, inputs, frames, "the double computing a relu");
  return 0;
}

// The DPU process itself: `dpushard dpu-child`, which a vart worker starts with posix_spawn
// (dpu_child.hpp, dpu_spawn.hpp). It loads every fragment it is given into the in-process
// vart backend and then runs frames on the shared memory until the worker closes the socket.
//
//   dpushard dpu-child --parent PID --timeout-ms MS --fragment ID [--fragment ID ...]
//
// Descriptor 3 is its end of the worker's socket pair; fragment k (in the order of the
// --fragment arguments) has its serialized graph at 4+2k and its frame memory at 5+2k, both
// memfds. It answers the load with "OK" and each fragment's runner batch (u32), or with one
// error line, and each kRun with "OK" and the outputs' fix points, or one error line.

#include <linux/close_range.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dpu_binding.hpp"
#include "dpu_child.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/exec/vart_backend.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard {
namespace {

using vart_detail::DpuBinding;
using vart_detail::FrameLayout;
using vart_detail::InPlaceBackend;

constexpr int kSocketFd = 3;

struct ChildArguments {
  pid_t parent = -1;
  int timeout_ms = 0;
  std::vector<int> ids;
};

int whole_number(std::string_view option, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || value < 0 || value > 1'000'000'000)
    throw Error(std::string(option) + " takes a whole number, got '" + text + "'");
  return static_cast<int>(value);
}

ChildArguments parse_child_arguments(int argc, char** argv) {
  ChildArguments parsed;
  for (int i = 2; i < argc; ++i) {
    const std::string_view option = argv[i];
    if (i + 1 >= argc) throw Error(std::string(option) + " needs a value");
    const int value = whole_number(option, argv[++i]);
    if (option == "--parent")
      parsed.parent = value;
    else if (option == "--timeout-ms")
      parsed.timeout_ms = value;
    else if (option == "--fragment")
      parsed.ids.push_back(value);
    else
      throw Error("unknown option '" + std::string(option) + "'");
  }
  if (parsed.parent <= 0 || parsed.timeout_ms <= 0 || parsed.ids.empty())
    throw Error("needs --parent, --timeout-ms and at least one --fragment");
  struct stat socket_stat {};
  if (::fstat(kSocketFd, &socket_stat) != 0 || !S_ISSOCK(socket_stat.st_mode))
    throw Error("descriptor 3 is not the worker's socket: a vart worker starts this command");
  return parsed;
}

std::string read_whole(int fd) {
  struct stat file {};
  if (::fstat(fd, &file) != 0) throw Error("descriptor " + std::to_string(fd) + " is not open");
  std::string bytes(static_cast<std::size_t>(file.st_size), '\0');
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot read the graph at descriptor " + std::to_string(fd));
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

// A fragment in the child: its backend, and its tensors' addresses in the shared memory.
struct ServedFragment {
  std::unique_ptr<Backend> backend;
  InPlaceBackend* in_place = nullptr;
  FrameLayout layout;
  std::vector<const std::int8_t*> inputs;
  std::vector<std::int8_t*> outputs;
};

ServedFragment load_fragment(int graph_fd, int memory_fd, int id) {
  const Graph graph = parse_xmodel(read_whole(graph_fd), "DPU fragment " + std::to_string(id));
  ServedFragment served;
  const DpuBinding binding = vart_detail::bind_dpu_subgraph(graph);
  served.layout = vart_detail::frame_layout(binding);
  struct stat memory_stat {};
  const std::size_t bytes = std::max<std::size_t>(served.layout.total, 1);
  if (::fstat(memory_fd, &memory_stat) != 0 ||
      static_cast<std::size_t>(memory_stat.st_size) != bytes)
    throw Error("vart: graph '" + graph.name() + "': the frame memory at descriptor " +
                std::to_string(memory_fd) + " does not hold " + std::to_string(bytes) + " bytes");
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memory_fd, 0);
  if (memory == MAP_FAILED)
    throw Error("vart: graph '" + graph.name() +
                "': cannot map the frame memory: " + std::strerror(errno));
  ::close(memory_fd);  // the mapping stays
  auto* base = static_cast<std::int8_t*>(memory);
  BackendOptions options;
  options.threads = 1;  // frames come one at a time
  served.backend = make_vart_backend_in_process(options);
  served.backend->load(graph);
  served.in_place = dynamic_cast<InPlaceBackend*>(served.backend.get());
  if (served.in_place == nullptr) throw Error("vart: the in-process backend has no in-place run");
  for (const std::size_t offset : served.layout.in_offsets) served.inputs.push_back(base + offset);
  for (const std::size_t offset : served.layout.out_offsets)
    served.outputs.push_back(base + offset);
  return served;
}

[[noreturn]] void serve_frames(int fd, std::map<int, ServedFragment>& served) {
  using vart_detail::kDrop;
  using vart_detail::kRun;
  for (;;) {
    const std::string message = vart_detail::receive_message(fd);
    if (message.empty()) ::_exit(0);  // the worker closed the socket
    int id = -1;
    if (message.size() == 1 + sizeof id) std::memcpy(&id, message.data() + 1, sizeof id);
    const auto it = served.find(id);
    if (message[0] == kDrop) {
      if (it != served.end()) served.erase(it);
      continue;
    }
    if (message[0] != kRun || it == served.end()) ::_exit(3);
    try {
      // The reply carries the outputs' fix points: the runner's tensors', not the file's.
      const std::vector<int> fix_points =
          it->second.in_place->run_on(it->second.inputs, it->second.outputs);
      std::string reply = "OK";
      reply.append(reinterpret_cast<const char*>(fix_points.data()),
                   sizeof(int) * fix_points.size());
      vart_detail::send_message(fd, reply);
    } catch (const std::exception& e) {
      vart_detail::send_message(fd, e.what());
    }
  }
}

}  // namespace

int run_dpu_child(int argc, char** argv) {
  ChildArguments arguments;
  try {
    arguments = parse_child_arguments(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dpushard: error: " << vart_detail::kDpuChildCommand << ": " << e.what() << "\n";
    return 2;
  }
  // Dies with the worker; a worker that died before this line is noticed here.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != arguments.parent) ::_exit(1);
  ::signal(SIGINT, SIG_IGN);  // the worker handles Ctrl-C and then closes the socket
  ::signal(SIGPIPE, SIG_IGN);
  // Only what the worker handed over stays open.
  const unsigned last = kSocketFd + 2 * static_cast<unsigned>(arguments.ids.size());
  ::close_range(last + 1, ~0U, 0);
  // VART's DPU controller gives up on a job after XLNX_DPU_TIMEOUT ms: the frame's budget.
  ::setenv("XLNX_DPU_TIMEOUT", std::to_string(arguments.timeout_ms).c_str(), 1);
  std::map<int, ServedFragment> served;
  try {
    std::string reply = "OK";
    for (std::size_t k = 0; k < arguments.ids.size(); ++k) {
      const int graph_fd = kSocketFd + 1 + 2 * static_cast<int>(k);
      ServedFragment fragment = load_fragment(graph_fd, graph_fd + 1, arguments.ids[k]);
      ::close(graph_fd);
      const std::uint32_t batch = fragment.in_place->runner_batch();
      reply.append(reinterpret_cast<const char*>(&batch), sizeof batch);
      served.emplace(arguments.ids[k], std::move(fragment));
    }
    vart_detail::send_message(kSocketFd, reply);
  } catch (const std::exception& e) {
    vart_detail::send_message(kSocketFd, e.what());
    ::_exit(1);
  }
  serve_frames(kSocketFd, served);
}

}  // namespace dpushard

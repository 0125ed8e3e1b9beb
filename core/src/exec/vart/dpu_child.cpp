// VART in a supervised child process (dpu_child.hpp).

#include "dpu_child.hpp"

#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "dpushard/error.hpp"
#include "dpushard/perf.hpp"
#include "dpushard/shape.hpp"

namespace dpushard::vart_detail {
namespace {

constexpr char kRun = 'R';   // + the fragment's id: run the frame in its memory
constexpr char kDrop = 'U';  // + the fragment's id: unload it (no reply)
constexpr std::size_t kMaxMessage = 4096;

std::size_t bytes_of(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (const auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

void send_message(int fd, const std::string& message) {
  const std::string text = message.substr(0, kMaxMessage);
  while (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

std::string command(char what, int id) {
  std::string message(1 + sizeof id, what);
  std::memcpy(message.data() + 1, &id, sizeof id);
  return message;
}

// One message; "" when the peer closed the socket.
std::string receive_message(int fd) {
  char buffer[kMaxMessage];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n >= 0) return std::string(buffer, static_cast<std::size_t>(n));
    if (errno != EINTR) return "";
  }
}

// A reply within the socket's receive timeout (SO_RCVTIMEO, set once per child): one system
// call per frame instead of poll + recv. false on timeout; "" in `reply` when the child died.
bool reply_within(int fd, std::string& reply) {
  char buffer[kMaxMessage];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n >= 0) {
      reply.assign(buffer, static_cast<std::size_t>(n));
      return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    if (errno != EINTR) {
      reply.clear();
      return true;
    }
  }
}

// Waits up to `timeout_ms` for a message; false on timeout.
bool readable_within(int fd, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return true;  // let recv report it
  }
}

}  // namespace

double budget_factor() {
  const char* text = std::getenv("DPUSHARD_VART_BUDGET_FACTOR");
  if (text == nullptr || *text == '\0') return kBudgetFactor;
  char* end = nullptr;
  const double factor = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(factor >= 1.0) || factor > 1e6)
    throw Error(
        std::string("DPUSHARD_VART_BUDGET_FACTOR must be a number from 1 to 1000000, got '") +
        text + "'");
  return factor;
}

namespace {

// The frame's budget: the timing model's latency for the fragment, times the factor.
int budget_for(const Graph& graph, std::int64_t jobs) {
  double predicted_ms = 0;
  try {
    predicted_ms = predict(graph, builtin_target("kv260")).latency_ms;
  } catch (const std::exception&) {
    predicted_ms = 0;  // a graph the model cannot price: the floor applies
  }
  const double budget =
      budget_factor() * predicted_ms * static_cast<double>(std::max<std::int64_t>(1, jobs));
  return std::max(kMinBudgetMs, static_cast<int>(std::min(budget, 600'000.0)));
}

}  // namespace

std::shared_ptr<DpuProcess> DpuProcess::shared(const BackendOptions& options,
                                               BackendFactory in_process) {
  static std::mutex mutex;
  static std::weak_ptr<DpuProcess> current;
  const std::lock_guard lock(mutex);
  if (auto process = current.lock()) return process;
  auto process = std::make_shared<DpuProcess>(options, in_process);
  current = process;
  return process;
}

DpuProcess::DpuProcess(BackendOptions options, BackendFactory in_process)
    : options_(std::move(options)), in_process_(in_process) {}

DpuProcess::~DpuProcess() { stop_child(); }

int DpuProcess::add(DpuFragment fragment) {
  const std::lock_guard lock(mutex_);
  const int id = next_id_++;
  fragments_.emplace(id, std::move(fragment));
  // A process-wide XLNX_DPU_TIMEOUT: the largest budget of the fragments it runs.
  budget_ms_ = kMinBudgetMs;
  for (const auto& [i, f] : fragments_) budget_ms_ = std::max(budget_ms_, f.budget_ms);
  stop_child();
  const std::string who = fragments_.at(id).where;
  try {
    start_child(who);
  } catch (const std::exception&) {
    fragments_.erase(id);
    budget_ms_ = kMinBudgetMs;
    for (const auto& [i, f] : fragments_) budget_ms_ = std::max(budget_ms_, f.budget_ms);
    if (!fragments_.empty()) {
      try {
        start_child(who);
      } catch (const std::exception&) {
        // the next frame tries again (run())
      }
    }
    throw;
  }
  return id;
}

void DpuProcess::remove(int id) {
  const std::lock_guard lock(mutex_);
  fragments_.erase(id);
  if (fragments_.empty()) return stop_child();
  if (child_ > 0) send_message(fd_, command(kDrop, id));
}

std::vector<int> DpuProcess::run(int id) {
  const std::lock_guard lock(mutex_);
  const DpuFragment& fragment = fragments_.at(id);
  if (child_ < 0) start_child(fragment.where);  // a restart that failed earlier: try again
  send_message(fd_, command(kRun, id));
  std::string reply;
  if (!reply_within(fd_, reply)) {
    ::kill(child_, SIGKILL);
    throw DeviceError(restart_after(fragment, "the frame exceeded its time budget of " +
                                                  std::to_string(budget_ms_ + kGraceMs) +
                                                  " ms; the DPU process was killed"));
  }
  if (reply.empty())
    throw DeviceError(
        restart_after(fragment, "the DPU process died during the frame (" + reap() + ")"));
  // Anything but "OK" + one fix point per output is the in-process backend's one-line error.
  // Its runner is retired after a failed job (the DPU may still write into its buffers):
  // a fresh process opens fresh runners.
  const std::size_t outputs = fragment.out_bytes.size();
  if (reply.rfind("OK", 0) != 0 || reply.size() != 2 + sizeof(int) * outputs) {
    const std::string& where = fragment.where;
    const std::string what =
        reply.rfind(where + ": ", 0) == 0 ? reply.substr(where.size() + 2) : reply;
    throw DeviceError(restart_after(fragment, what));
  }
  std::vector<int> fix_points(outputs);
  std::memcpy(fix_points.data(), reply.data() + 2, sizeof(int) * outputs);
  return fix_points;
}

std::string DpuProcess::restart_after(const DpuFragment& fragment, const std::string& what) {
  if (fd_ >= 0 && child_ > 0) {
    ::kill(child_, SIGKILL);
    reap();
  }
  ++restarts_;
  std::string message = fragment.where + ": " + what;
  try {
    start_child(fragment.where);
    message += "; restarted it (restart " + std::to_string(restarts_) + ")";
  } catch (const std::exception& e) {
    message += "; restarting it failed: " + std::string(e.what());
  }
  return message;
}

void DpuProcess::start_child(const std::string& who) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error(who + ": socketpair: " + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(who + ": cannot start the DPU process: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::signal(SIGINT, SIG_IGN);  // the worker handles Ctrl-C and then closes the socket
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_IGN);
    // The worker's sockets and files stay the worker's: a connection it closes must not stay
    // open in the child.
    const auto fd = static_cast<unsigned>(fds[1]);
    if (fd > 3) ::close_range(3, fd - 1, 0);
    ::close_range(fd + 1, ~0U, 0);
    serve(fds[1]);
  }
  ::close(fds[1]);
  child_ = pid;
  fd_ = fds[0];
  const int load_budget = std::max(60'000, budget_ms_ + kGraceMs);
  if (!readable_within(fd_, load_budget)) {
    ::kill(child_, SIGKILL);
    reap();
    throw Error(who + ": the DPU process did not load the fragments within " +
                std::to_string(load_budget) + " ms");
  }
  const std::string reply = receive_message(fd_);
  if (reply.empty()) {
    const std::string reason = reap();
    throw Error(who + ": the DPU process died loading the fragments (" + reason + ")");
  }
  if (reply != "OK") {
    stop_child();
    throw Error(reply);
  }
  const int wait_ms = budget_ms_ + kGraceMs;
  const timeval timeout{wait_ms / 1000, (wait_ms % 1000) * 1000};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
}

void DpuProcess::stop_child() {
  if (child_ <= 0) return;
  ::close(fd_);  // the child leaves on the closed socket
  fd_ = -1;
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(child_, nullptr, WNOHANG) == child_) {
      child_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child_, SIGKILL);
  ::waitpid(child_, nullptr, 0);
  child_ = -1;
}

std::string DpuProcess::reap() {
  int status = 0;
  pid_t done = -1;
  while ((done = ::waitpid(child_, &status, 0)) < 0 && errno == EINTR) {
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  child_ = -1;
  if (done < 0) return "its status is unknown";
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped";
}

namespace {

// A fragment in the child: its backend, and its tensors' addresses in the shared memory.
struct Served {
  std::unique_ptr<Backend> backend;
  InPlaceBackend* in_place = nullptr;  // the backend, when it runs on the shared memory
  std::vector<const std::int8_t*> inputs;
  std::vector<std::int8_t*> outputs;
  std::vector<QTensor> copies;  // without in_place: the inputs as QTensors
};

std::vector<int> serve_frame(Served& served, const DpuFragment& fragment) {
  if (served.in_place != nullptr) return served.in_place->run_on(served.inputs, served.outputs);
  for (std::size_t i = 0; i < served.copies.size(); ++i)
    std::memcpy(served.copies[i].data.data(), served.inputs[i], fragment.in_bytes[i]);
  const std::vector<QTensor> outputs = served.backend->run(served.copies);
  std::vector<int> fix_points;
  for (std::size_t o = 0; o < outputs.size() && o < served.outputs.size(); ++o) {
    std::memcpy(served.outputs[o], outputs[o].data.data(),
                std::min(fragment.out_bytes[o], outputs[o].data.size()));
    fix_points.push_back(outputs[o].fix_point);
  }
  return fix_points;
}

}  // namespace

void DpuProcess::serve(int fd) {
  // VART's DPU controller gives up on a job after XLNX_DPU_TIMEOUT ms: the frame's budget.
  ::setenv("XLNX_DPU_TIMEOUT", std::to_string(budget_ms_).c_str(), 1);
  std::map<int, Served> served;
  try {
    BackendOptions options = options_;
    options.threads = 1;  // frames come one at a time
    for (const auto& [id, fragment] : fragments_) {
      Served s;
      s.backend = in_process_(options);
      s.backend->load(fragment.graph);
      s.in_place = dynamic_cast<InPlaceBackend*>(s.backend.get());
      const DpuBinding binding = bind_dpu_subgraph(fragment.graph);
      for (std::size_t i = 0; i < fragment.in_offsets.size(); ++i) {
        s.inputs.push_back(fragment.memory + fragment.in_offsets[i]);
        const auto& spec = binding.inputs[i];
        if (s.in_place == nullptr)
          s.copies.push_back(QTensor{spec.name, spec.shape, spec.fix_point,
                                     std::vector<std::int8_t>(fragment.in_bytes[i])});
      }
      for (const std::size_t offset : fragment.out_offsets)
        s.outputs.push_back(fragment.memory + offset);
      served.emplace(id, std::move(s));
    }
    send_message(fd, "OK");
  } catch (const std::exception& e) {
    send_message(fd, e.what());
    ::_exit(0);
  }
  for (;;) {
    const std::string message = receive_message(fd);
    int id = -1;
    if (message.size() == 1 + sizeof id) std::memcpy(&id, message.data() + 1, sizeof id);
    if (message.empty()) ::_exit(0);  // the parent closed the socket
    const auto it = served.find(id);
    if (message[0] == kDrop) {
      if (it != served.end()) served.erase(it);
      continue;
    }
    if (message[0] != kRun || it == served.end()) ::_exit(0);
    try {
      // The reply carries the outputs' fix points: the runner's tensors', not the file's.
      const std::vector<int> fix_points = serve_frame(it->second, fragments_.at(id));
      std::string reply = "OK";
      reply.append(reinterpret_cast<const char*>(fix_points.data()),
                   sizeof(int) * fix_points.size());
      send_message(fd, reply);
    } catch (const std::exception& e) {
      send_message(fd, e.what());
    }
  }
}

SupervisedBackend::SupervisedBackend(BackendOptions options, BackendFactory in_process)
    : options_(std::move(options)), in_process_(in_process) {}

SupervisedBackend::~SupervisedBackend() { unload(); }

void SupervisedBackend::unload() {
  if (process_ && id_ >= 0) process_->remove(id_);
  id_ = -1;
  process_.reset();
  if (shared_ != nullptr) ::munmap(shared_, shared_bytes_);
  shared_ = nullptr;
  frame_ = {};
}

void SupervisedBackend::load(const Graph& graph) {
  const std::lock_guard lock(mutex_);
  unload();
  where_ = "vart: graph '" + graph.name() + "'";
  binding_ = bind_dpu_subgraph(graph);  // the one-line errors, before any process exists
  DpuFragment fragment;
  fragment.graph = graph;
  fragment.where = where_;
  std::size_t offset = 0;
  for (const auto& t : binding_.inputs) {
    fragment.in_offsets.push_back(offset);
    fragment.in_bytes.push_back(bytes_of(t.shape));
    offset += fragment.in_bytes.back();
  }
  for (const auto& t : binding_.outputs) {
    fragment.out_offsets.push_back(offset);
    fragment.out_bytes.push_back(bytes_of(t.shape));
    offset += fragment.out_bytes.back();
  }
  shared_bytes_ = std::max<std::size_t>(offset, 1);
  void* memory =
      ::mmap(nullptr, shared_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    throw Error(where_ + ": cannot map " + std::to_string(shared_bytes_) +
                " bytes for the DPU process: " + std::strerror(errno));
  shared_ = static_cast<std::int8_t*>(memory);
  fragment.memory = shared_;
  // Jobs per frame are not known before the runner's batch: price one job per frame.
  const std::int64_t frames = binding_.inputs.empty() ? 1 : binding_.inputs[0].shape.at(0);
  fragment.budget_ms = budget_for(graph, frames);
  FrameMemory frame;
  for (std::size_t i = 0; i < fragment.in_offsets.size(); ++i)
    frame.inputs.emplace_back(shared_ + fragment.in_offsets[i], fragment.in_bytes[i]);
  for (std::size_t o = 0; o < fragment.out_offsets.size(); ++o)
    frame.outputs.emplace_back(shared_ + fragment.out_offsets[o], fragment.out_bytes[o]);
  process_ = DpuProcess::shared(options_, in_process_);
  try {
    id_ = process_->add(std::move(fragment));
  } catch (...) {
    unload();
    throw;
  }
  frame_ = std::move(frame);
}

std::vector<QTensor> SupervisedBackend::run_in_place() {
  if (id_ < 0) throw Error("vart: run() before load()");
  const std::vector<int> fix_points = process_->run(id_);
  std::vector<QTensor> outputs;
  for (std::size_t o = 0; o < binding_.outputs.size(); ++o)
    outputs.push_back(
        QTensor{binding_.outputs[o].name, binding_.outputs[o].shape, fix_points[o], {}});
  return outputs;
}

std::vector<QTensor> SupervisedBackend::run(const std::vector<QTensor>& inputs) {
  const std::lock_guard lock(mutex_);
  if (id_ < 0) throw Error("vart: run() before load()");
  check_input_count(where_, inputs.size(), binding_.inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& spec = binding_.inputs[i];
    check_input(where_, spec.name, spec.shape, spec.fix_point, inputs[i]);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    std::memcpy(frame_.inputs[i].data(), inputs[i].data.data(), frame_.inputs[i].size());
  std::vector<QTensor> outputs = run_in_place();
  for (std::size_t o = 0; o < outputs.size(); ++o)
    outputs[o].data.assign(frame_.outputs[o].begin(), frame_.outputs[o].end());
  return outputs;
}

}  // namespace dpushard::vart_detail

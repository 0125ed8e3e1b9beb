// VART in a supervised child process (dpu_child.hpp).

#include "dpu_child.hpp"

#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>

#include "dpushard/error.hpp"
#include "dpushard/perf.hpp"
#include "dpushard/shape.hpp"

namespace dpushard::vart_detail {
namespace {

constexpr char kRun = 'R';
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

// One message; "" when the peer closed the socket.
std::string receive_message(int fd) {
  std::string buffer(kMaxMessage, '\0');
  for (;;) {
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n >= 0) return buffer.substr(0, static_cast<std::size_t>(n));
    if (errno != EINTR) return "";
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

// The frame's budget: the timing model's latency for the fragment, times the factor.
int budget_for(const Graph& graph, std::int64_t jobs) {
  double predicted_ms = 0;
  try {
    predicted_ms = predict(graph, builtin_target("kv260")).latency_ms;
  } catch (const std::exception&) {
    predicted_ms = 0;  // a graph the model cannot price: the floor applies
  }
  const double budget =
      kBudgetFactor * predicted_ms * static_cast<double>(std::max<std::int64_t>(1, jobs));
  return std::max(kMinBudgetMs, static_cast<int>(std::min(budget, 600'000.0)));
}

}  // namespace

SupervisedBackend::SupervisedBackend(BackendOptions options, BackendFactory in_process)
    : options_(std::move(options)), in_process_(in_process) {}

SupervisedBackend::~SupervisedBackend() {
  stop_child();
  if (shared_ != nullptr) ::munmap(shared_, shared_bytes_);
}

void SupervisedBackend::load(const Graph& graph) {
  const std::lock_guard lock(mutex_);
  stop_child();
  if (shared_ != nullptr) ::munmap(shared_, shared_bytes_);
  shared_ = nullptr;
  where_ = "vart: graph '" + graph.name() + "'";
  binding_ = bind_dpu_subgraph(graph);  // the one-line errors, before any process exists
  graph_ = graph;
  frames_ = binding_.inputs.empty() ? 1 : binding_.inputs[0].shape.at(0);
  in_offsets_.clear(), in_bytes_.clear(), out_offsets_.clear(), out_bytes_.clear();
  std::size_t offset = 0;
  for (const auto& t : binding_.inputs) {
    in_offsets_.push_back(offset);
    in_bytes_.push_back(bytes_of(t.shape));
    offset += in_bytes_.back();
  }
  for (const auto& t : binding_.outputs) {
    out_offsets_.push_back(offset);
    out_bytes_.push_back(bytes_of(t.shape));
    offset += out_bytes_.back();
  }
  shared_bytes_ = std::max<std::size_t>(offset, 1);
  void* memory =
      ::mmap(nullptr, shared_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    throw Error(where_ + ": cannot map " + std::to_string(shared_bytes_) +
                " bytes for the DPU process: " + std::strerror(errno));
  shared_ = static_cast<std::int8_t*>(memory);
  // Jobs per frame are not known before the runner's batch: price one job per frame.
  budget_ms_ = budget_for(graph, frames_);
  start_child();
}

std::vector<QTensor> SupervisedBackend::run(const std::vector<QTensor>& inputs) {
  const std::lock_guard lock(mutex_);
  if (shared_ == nullptr) throw Error("vart: run() before load()");
  check_input_count(where_, inputs.size(), binding_.inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& spec = binding_.inputs[i];
    check_input(where_, spec.name, spec.shape, spec.fix_point, inputs[i]);
  }
  if (child_ < 0) start_child();  // a restart that failed earlier: try again
  for (std::size_t i = 0; i < inputs.size(); ++i)
    std::memcpy(shared_ + in_offsets_[i], inputs[i].data.data(), in_bytes_[i]);
  send_message(fd_, std::string(1, kRun));
  if (!readable_within(fd_, budget_ms_ + kGraceMs)) {
    ::kill(child_, SIGKILL);
    throw DeviceError(restart_after("the frame exceeded its time budget of " +
                                    std::to_string(budget_ms_ + kGraceMs) +
                                    " ms; the DPU process was killed"));
  }
  const std::string reply = receive_message(fd_);
  if (reply.empty())
    throw DeviceError(restart_after("the DPU process died during the frame (" + reap() + ")"));
  // Anything but "OK" + one fix point per output is the in-process backend's one-line error.
  // Its runner is retired after a failed job (the DPU may still write into its buffers):
  // a fresh process opens fresh runners.
  if (reply.rfind("OK", 0) != 0 || reply.size() != 2 + sizeof(int) * binding_.outputs.size()) {
    const std::string what =
        reply.rfind(where_ + ": ", 0) == 0 ? reply.substr(where_.size() + 2) : reply;
    throw DeviceError(restart_after(what));
  }
  std::vector<int> fix_points(binding_.outputs.size());
  std::memcpy(fix_points.data(), reply.data() + 2, sizeof(int) * fix_points.size());
  std::vector<QTensor> outputs;
  for (std::size_t o = 0; o < binding_.outputs.size(); ++o) {
    QTensor t;
    t.name = binding_.outputs[o].name;
    t.shape = binding_.outputs[o].shape;
    t.fix_point = fix_points[o];
    t.data.assign(shared_ + out_offsets_[o], shared_ + out_offsets_[o] + out_bytes_[o]);
    outputs.push_back(std::move(t));
  }
  return outputs;
}

std::string SupervisedBackend::restart_after(const std::string& what) {
  if (fd_ >= 0 && child_ > 0) {
    ::kill(child_, SIGKILL);
    reap();
  }
  ++restarts_;
  std::string message = where_ + ": " + what;
  try {
    start_child();
    message += "; restarted it (restart " + std::to_string(restarts_) + ")";
  } catch (const std::exception& e) {
    message += "; restarting it failed: " + std::string(e.what());
  }
  return message;
}

void SupervisedBackend::start_child() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error(where_ + ": socketpair: " + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(where_ + ": cannot start the DPU process: " + std::strerror(errno));
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
    throw Error(where_ + ": the DPU process did not load the fragment within " +
                std::to_string(load_budget) + " ms");
  }
  const std::string reply = receive_message(fd_);
  if (reply.empty()) {
    const std::string reason = reap();
    throw Error(where_ + ": the DPU process died loading the fragment (" + reason + ")");
  }
  if (reply != "OK") {
    stop_child();
    throw Error(reply);
  }
}

void SupervisedBackend::stop_child() {
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

std::string SupervisedBackend::reap() {
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

void SupervisedBackend::serve(int fd) {
  // VART's DPU controller gives up on a job after XLNX_DPU_TIMEOUT ms: the frame's budget.
  ::setenv("XLNX_DPU_TIMEOUT", std::to_string(budget_ms_).c_str(), 1);
  std::unique_ptr<Backend> backend;
  try {
    BackendOptions options = options_;
    options.threads = 1;  // frames come one at a time
    backend = in_process_(options);
    backend->load(graph_);
    send_message(fd, "OK");
  } catch (const std::exception& e) {
    send_message(fd, e.what());
    ::_exit(0);
  }
  // The input tensors live across frames: no allocation (and no fresh pages) per frame.
  std::vector<QTensor> inputs;
  for (std::size_t i = 0; i < binding_.inputs.size(); ++i) {
    const auto& spec = binding_.inputs[i];
    inputs.push_back(QTensor{spec.name, spec.shape, spec.fix_point, {}});
    inputs.back().data.resize(in_bytes_[i]);
  }
  for (;;) {
    const std::string command = receive_message(fd);
    if (command != std::string(1, kRun)) ::_exit(0);  // the parent closed the socket
    try {
      for (std::size_t i = 0; i < inputs.size(); ++i)
        std::memcpy(inputs[i].data.data(), shared_ + in_offsets_[i], in_bytes_[i]);
      const std::vector<QTensor> outputs = backend->run(inputs);
      // The reply carries the outputs' fix points: the runner's tensors', not the file's.
      std::string reply = "OK";
      for (std::size_t o = 0; o < outputs.size() && o < out_bytes_.size(); ++o) {
        std::memcpy(shared_ + out_offsets_[o], outputs[o].data.data(),
                    std::min(out_bytes_[o], outputs[o].data.size()));
        reply.append(reinterpret_cast<const char*>(&outputs[o].fix_point), sizeof(int));
      }
      send_message(fd, reply);
    } catch (const std::exception& e) {
      send_message(fd, e.what());
    }
  }
}

}  // namespace dpushard::vart_detail

// VART in a supervised child process (dpu_child.hpp): the worker's side. The child's side is
// dpu_child_main.cpp.

#include "dpu_child.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
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
#include <utility>

#include "dpu_log.hpp"
#include "dpu_spawn.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard::vart_detail {
namespace {

std::size_t bytes_of(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (const auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
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

std::string receive_message(int fd) {
  char buffer[kMaxMessage];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n >= 0) return std::string(buffer, static_cast<std::size_t>(n));
    if (errno != EINTR) return "";
  }
}

FrameLayout frame_layout(const DpuBinding& binding) {
  FrameLayout layout;
  for (const auto& t : binding.inputs) {
    layout.in_offsets.push_back(layout.total);
    layout.in_bytes.push_back(bytes_of(t.shape));
    layout.total += layout.in_bytes.back();
  }
  for (const auto& t : binding.outputs) {
    layout.out_offsets.push_back(layout.total);
    layout.out_bytes.push_back(bytes_of(t.shape));
    layout.total += layout.out_bytes.back();
  }
  return layout;
}

int backoff_ms(int failures) {
  if (failures <= 0) return 0;
  std::int64_t wait = kFirstBackoffMs;
  for (int i = 1; i < failures && wait < kMaxBackoffMs; ++i) wait *= 2;
  return static_cast<int>(std::min<std::int64_t>(wait, kMaxBackoffMs));
}

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

std::shared_ptr<DpuProcess> DpuProcess::shared() {
  static std::mutex mutex;
  static std::weak_ptr<DpuProcess> current;
  const std::lock_guard lock(mutex);
  if (auto process = current.lock()) return process;
  auto process = std::make_shared<DpuProcess>();
  current = process;
  return process;
}

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
    // A new set of fragments: tried now, back-off or not (the new one may be what fails).
    start_child(who);
    failed_starts_ = 0;
  } catch (const std::exception&) {
    fragments_.erase(id);
    budget_ms_ = kMinBudgetMs;
    for (const auto& [i, f] : fragments_) budget_ms_ = std::max(budget_ms_, f.budget_ms);
    if (!fragments_.empty()) {
      try {
        restart_child(who);
      } catch (const std::exception&) {
        // the next frame tries again when the back-off allows (run())
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

std::uint32_t DpuProcess::runner_batch(int id) {
  const std::lock_guard lock(mutex_);
  const auto it = fragments_.find(id);
  return it == fragments_.end() ? 0 : it->second.runner_batch;
}

std::vector<int> DpuProcess::run(int id) {
  const std::lock_guard lock(mutex_);
  const DpuFragment& fragment = fragments_.at(id);
  if (child_ < 0) {  // a restart that failed earlier: try again, unless backing off
    try {
      restart_child(fragment.where);
    } catch (const std::exception& e) {
      throw DeviceError(e.what());
    }
  }
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
  const std::size_t outputs = fragment.outputs;
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
    restart_child(fragment.where);
    message += "; restarted it (restart " + std::to_string(restarts_) + ")";
  } catch (const std::exception& e) {
    message += "; restarting it failed: " + std::string(e.what());
  }
  return message;
}

void DpuProcess::restart_child(const std::string& who) {
  const auto now = std::chrono::steady_clock::now();
  if (failed_starts_ > 0 && now < next_start_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_start_ - now).count();
    throw Error(who + ": the DPU process is down after " + std::to_string(failed_starts_) +
                " failed start" + (failed_starts_ == 1 ? "" : "s") + " (last: " + last_failure_ +
                "); next attempt in " + std::to_string(left) + " ms");
  }
  try {
    start_child(who);
    if (failed_starts_ > 0)
      dpu_log().info("event=dpu_started after_failed_starts={}", failed_starts_);
    failed_starts_ = 0;
  } catch (const std::exception& e) {
    ++failed_starts_;
    last_failure_ = e.what();
    const int wait = backoff_ms(failed_starts_);
    next_start_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait);
    dpu_log().warn("event=dpu_backoff failed_starts={} next_attempt_ms={} reason=\"{}\"",
                   failed_starts_, wait, last_failure_);
    throw Error(std::string(e.what()) + "; next attempt in " + std::to_string(wait) + " ms");
  }
}

void DpuProcess::start_child(const std::string& who) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error(who + ": socketpair: " + std::strerror(errno));
  // dpushard dpu-child --parent PID --timeout-ms BUDGET --fragment ID ...; the socket at 3,
  // fragment k's graph and memory at 4+2k and 5+2k (dpu_child_main.cpp).
  std::vector<std::string> args = {kDpuChildCommand, "--parent", std::to_string(::getpid()),
                                   "--timeout-ms", std::to_string(budget_ms_)};
  std::vector<int> handed = {fds[1]};
  for (const auto& [id, fragment] : fragments_) {
    args.insert(args.end(), {"--fragment", std::to_string(id)});
    handed.push_back(fragment.graph_fd);
    handed.push_back(fragment.memory_fd);
  }
  pid_t pid = -1;
  try {
    pid = spawn_own_image(args, handed, who);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  child_ = pid;
  fd_ = fds[0];
  const int load_budget = std::max(load_timeout_ms_, budget_ms_ + kGraceMs);
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
  // "OK" and each fragment's runner batch (u32), in the order of the --fragment arguments.
  if (reply.rfind("OK", 0) != 0 || reply.size() != 2 + 4 * fragments_.size()) {
    stop_child();
    throw Error(reply.rfind("OK", 0) == 0 ? who + ": the DPU process answered its load with " +
                                                std::to_string(reply.size()) + " bytes"
                                          : reply);
  }
  std::size_t at = 2;
  for (auto& [id, fragment] : fragments_) {
    std::memcpy(&fragment.runner_batch, reply.data() + at, 4);
    at += 4;
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

SupervisedBackend::SupervisedBackend(BackendOptions options) : options_(std::move(options)) {}

SupervisedBackend::~SupervisedBackend() { unload(); }

void SupervisedBackend::unload() {
  if (process_ && id_ >= 0) process_->remove(id_);
  id_ = -1;
  process_.reset();
  if (shared_ != nullptr) ::munmap(shared_, shared_bytes_);
  shared_ = nullptr;
  for (int* fd : {&memory_fd_, &graph_fd_})
    if (*fd >= 0) ::close(std::exchange(*fd, -1));
  frame_ = {};
}

namespace {

// An anonymous file of `bytes` bytes (close-on-exec), holding `content` when given.
int anonymous_file(const char* name, std::size_t bytes, const std::string& where,
                   const std::string* content = nullptr) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) throw Error(where + ": memfd_create: " + std::strerror(errno));
  const auto fail = [&](const char* what) {
    const int code = errno;
    ::close(fd);
    throw Error(where + ": " + what + " of " + std::to_string(bytes) +
                " bytes for the DPU process: " + std::strerror(code));
  };
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) fail("ftruncate");
  for (std::size_t done = 0; content != nullptr && done < content->size();) {
    const ssize_t n =
        ::pwrite(fd, content->data() + done, content->size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing the graph");
    done += static_cast<std::size_t>(n);
  }
  return fd;
}

}  // namespace

void SupervisedBackend::load(const Graph& graph) {
  const std::lock_guard lock(mutex_);
  unload();
  where_ = "vart: graph '" + graph.name() + "'";
  binding_ = bind_dpu_subgraph(graph);  // the one-line errors, before any process exists
  const FrameLayout layout = frame_layout(binding_);
  DpuFragment fragment;
  fragment.where = where_;
  fragment.outputs = binding_.outputs.size();
  shared_bytes_ = std::max<std::size_t>(layout.total, 1);
  memory_fd_ = anonymous_file("dpushard-frame", shared_bytes_, where_);
  const std::string bytes = serialize_xmodel(graph);
  graph_fd_ = anonymous_file("dpushard-graph", bytes.size(), where_, &bytes);
  void* memory = ::mmap(nullptr, shared_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, memory_fd_, 0);
  if (memory == MAP_FAILED) {
    const int code = errno;
    unload();
    throw Error(where_ + ": cannot map " + std::to_string(shared_bytes_) +
                " bytes for the DPU process: " + std::strerror(code));
  }
  shared_ = static_cast<std::int8_t*>(memory);
  fragment.graph_fd = graph_fd_;
  fragment.memory_fd = memory_fd_;
  // Jobs per frame are not known before the runner's batch: price one job per frame.
  const std::int64_t frames = binding_.inputs.empty() ? 1 : binding_.inputs[0].shape.at(0);
  fragment.budget_ms = budget_for(graph, frames);
  FrameMemory frame;
  for (std::size_t i = 0; i < layout.in_offsets.size(); ++i)
    frame.inputs.emplace_back(shared_ + layout.in_offsets[i], layout.in_bytes[i]);
  for (std::size_t o = 0; o < layout.out_offsets.size(); ++o)
    frame.outputs.emplace_back(shared_ + layout.out_offsets[o], layout.out_bytes[o]);
  process_ = DpuProcess::shared();
  try {
    id_ = process_->add(std::move(fragment));
  } catch (...) {
    unload();
    throw;
  }
  frame_ = std::move(frame);
}

std::uint32_t SupervisedBackend::runner_batch() const {
  return process_ && id_ >= 0 ? process_->runner_batch(id_) : 0;
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

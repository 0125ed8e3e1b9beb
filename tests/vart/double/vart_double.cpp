// The VART runner double (vart_double.hpp): Runner::create_runner and the runners it returns.

#include "vart_double.hpp"

#include <fcntl.h>
#include <glog/logging.h>
#include <unistd.h>

#include <vart/runner.hpp>
#include <vart/runner_ext.hpp>
#include <vart/tensor_buffer.hpp>
#include <xir/graph/graph.hpp>
#include <xir/graph/subgraph.hpp>
#include <xir/op/op.hpp>
#include <xir/tensor/tensor.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "dpu_query.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/xmodel/lower_compiled.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard::vart_double {
namespace {

std::mutex g_mutex;
std::optional<Settings> g_settings;
Journal g_journal;
int g_job_counter = 0;  // over the whole process: fault_job counts here

int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    throw Error(std::string(name) + "='" + text + "' is not a number");
  }
}

bool env_flag(const char* name) { return env_int(name, 0) != 0; }

// One tensor of a runner: its own xir::Tensor (the DPU's batch) and its place in the job.
struct TensorSpec {
  std::unique_ptr<xir::Tensor> tensor;
  std::size_t frame_bytes = 0;  // one batch entry, dense int8
};

// A buffer as the edge DPU runner hands out: one host allocation per batch entry (what the
// CPU sees) and one "device" copy per entry (what the DPU reads and writes), moved only by
// sync_for_write / sync_for_read over [offset, offset + size) of every entry.
class DpuBuffer final : public vart::TensorBuffer {
 public:
  DpuBuffer(const xir::Tensor* tensor, std::size_t frame_bytes, int batch)
      : vart::TensorBuffer(tensor),
        frame_bytes_(frame_bytes),
        host_(static_cast<std::size_t>(batch), std::vector<std::int8_t>(frame_bytes)),
        device_(host_) {}

  std::pair<std::uint64_t, std::size_t> data(const std::vector<std::int32_t> idx = {}) override {
    const std::vector<std::int32_t> shape = get_tensor()->get_shape();
    std::size_t batch = 0, offset = 0;
    if (!idx.empty()) {
      if (idx.size() != shape.size()) return {0, 0};
      for (std::size_t d = 0; d < shape.size(); ++d)
        if (idx[d] < 0 || idx[d] >= shape[d]) return {0, 0};
      batch = static_cast<std::size_t>(idx[0]);
      for (std::size_t d = 1; d < shape.size(); ++d)
        offset = offset * static_cast<std::size_t>(shape[d]) + static_cast<std::size_t>(idx[d]);
    }
    return {reinterpret_cast<std::uint64_t>(host_[batch].data() + offset), frame_bytes_ - offset};
  }
  location_t get_location() const override { return location_t::HOST_PHY; }
  std::pair<std::uint64_t, std::size_t> data_phy(const std::vector<std::int32_t>) override {
    return {0, 0};  // no physical memory on a host
  }
  void sync_for_write(std::uint64_t offset, std::size_t size) override {
    record(true, offset, size);
    for (std::size_t b = 0; b < host_.size(); ++b) copy(host_[b], device_[b], offset, size);
  }
  void sync_for_read(std::uint64_t offset, std::size_t size) override {
    record(false, offset, size);
    for (std::size_t b = 0; b < host_.size(); ++b) copy(device_[b], host_[b], offset, size);
  }

  std::vector<std::int8_t>& device(std::size_t b) { return device_[b]; }

 private:
  void record(bool for_write, std::uint64_t offset, std::size_t size) {
    const std::lock_guard lock(g_mutex);
    g_journal.syncs.push_back({get_tensor()->get_name(), for_write, offset, size});
  }
  void copy(const std::vector<std::int8_t>& from, std::vector<std::int8_t>& to,
            std::uint64_t offset, std::size_t size) const {
    // VART checks the range (a CHECK, which aborts); the double does the same.
    CHECK_LE(offset + size, frame_bytes_)
        << "sync beyond the buffer of " << get_tensor()->get_name();
    std::memcpy(to.data() + offset, from.data() + offset, size);
  }

  std::size_t frame_bytes_;
  std::vector<std::vector<std::int8_t>> host_;
  std::vector<std::vector<std::int8_t>> device_;
};

// The ops of DPU subgraph `name` of a compiled graph and the ops producing its inputs (the
// `data-fix` ops): the DPU's computation alone, without the CPU ops after it (fix2float).
Graph dpu_part(const Graph& compiled, const std::string& name) {
  std::set<std::string> members;
  const std::function<bool(const Subgraph&, bool)> collect = [&](const Subgraph& s, bool inside) {
    inside = inside || s.name == name;
    if (inside) members.insert(s.ops.begin(), s.ops.end());
    bool found = inside;
    for (const Subgraph& child : s.children) found = collect(child, inside) || found;
    return found;
  };
  if (!compiled.root() || !collect(*compiled.root(), false))
    throw Error("no subgraph '" + name + "' in the compiled graph");
  for (const Op& op : compiled.ops())
    if (members.contains(op.name))
      for (const std::string& p : op.all_producers()) members.insert(p);
  Graph part(compiled.name());
  for (const Op& op : compiled.ops())
    if (members.contains(op.name)) part.add_op(op);
  return part;
}

// The job's arithmetic: `ref` on a graph in `_int` form, batch entry by batch entry (in groups
// of the fragment's own batch). That graph is the `_int` fragment, or the DPU subgraph's own
// ops lowered to `_int` ops (lower_compiled.hpp); `names` maps a runner tensor's name to the
// graph's name for it (absent: the same name, as in an `_int` fragment).
class Arithmetic {
 public:
  Arithmetic(const Graph& graph, std::map<std::string, std::string> names)
      : specs_(input_specs(graph)), names_(std::move(names)) {
    backend_ = make_backend("ref");
    backend_->load(graph);
    for (const Op* out : graph.outputs()) outputs_.push_back(out->name);
  }

  // The `_int` fragment of the settings, or the runner's DPU subgraph lowered.
  static Arithmetic for_subgraph(const xir::Subgraph* subgraph, const Settings& settings) {
    if (settings.int_graph) return Arithmetic(*settings.int_graph, {});
    for (const Graph& g : settings.int_graphs)
      if (g.name() == subgraph->get_graph()->get_name()) return Arithmetic(g, {});
    std::string bytes;
    subgraph->get_graph()->serialize_to_string(&bytes);
    const Graph compiled = parse_xmodel(bytes, "the runner's graph");
    const Graph part = dpu_part(compiled, subgraph->get_name());
    const Graph* weights = settings.weights_graph ? &*settings.weights_graph : nullptr;
    std::map<std::string, std::string> names;  // tensor -> the op producing it
    for (const Op& op : part.ops()) names[op.output.name] = op.name;
    return Arithmetic(lower_compiled(part, weights), std::move(names));
  }

  // `in[t][b]` / `out[t][b]`: batch entry b of runner tensor t (by name in `names`).
  using Entries = std::vector<std::vector<std::vector<std::int8_t>*>>;  // [tensor][entry]
  void run(const std::vector<std::string>& in_names, const Entries& in,
           const std::vector<std::string>& out_names, Entries& out, int batch) {
    const std::int64_t group = specs_.empty() ? 1 : std::max<std::int64_t>(1, specs_[0].shape[0]);
    for (std::int64_t first = 0; first < batch; first += group) {
      std::vector<QTensor> inputs;
      for (const QTensor& spec : specs_) {
        const auto it = std::find_if(in_names.begin(), in_names.end(), [&](const std::string& n) {
          return graph_name(n) == spec.name;
        });
        if (it == in_names.end())
          throw std::runtime_error("vart double: the DPU subgraph has no input tensor '" +
                                   spec.name + "' of the graph it computes");
        const std::size_t t = static_cast<std::size_t>(it - in_names.begin());
        QTensor q = spec;
        for (std::int64_t b = first; b < first + group; ++b) {
          // A short last group repeats its first entry; those results are dropped.
          const auto& entry = *in[t][static_cast<std::size_t>(b < batch ? b : first)];
          q.data.insert(q.data.end(), entry.begin(), entry.end());
        }
        inputs.push_back(std::move(q));
      }
      const std::vector<QTensor> results = backend_->run(inputs);
      for (std::size_t t = 0; t < out_names.size(); ++t) {
        const auto it = std::find(outputs_.begin(), outputs_.end(), graph_name(out_names[t]));
        if (it == outputs_.end())
          throw std::runtime_error("vart double: the graph it computes has no output '" +
                                   out_names[t] + "'");
        const QTensor& r = results[static_cast<std::size_t>(it - outputs_.begin())];
        const std::size_t frame = r.data.size() / static_cast<std::size_t>(group);
        for (std::int64_t b = first; b < std::min<std::int64_t>(first + group, batch); ++b) {
          auto& entry = *out[t][static_cast<std::size_t>(b)];
          if (entry.size() != frame)
            throw std::runtime_error("vart double: output '" + out_names[t] + "' has " +
                                     std::to_string(frame) +
                                     " bytes a frame in the _int fragment, " +
                                     std::to_string(entry.size()) + " on the DPU");
          std::memcpy(entry.data(), r.data.data() + static_cast<std::size_t>(b - first) * frame,
                      frame);
        }
      }
    }
  }

 private:
  std::string graph_name(const std::string& tensor) const {
    const auto it = names_.find(tensor);
    return it == names_.end() ? tensor : it->second;
  }

  std::vector<QTensor> specs_;
  std::map<std::string, std::string> names_;
  std::vector<std::string> outputs_;
  std::unique_ptr<Backend> backend_;
};

// The subgraph's boundary tensors in graph order (their producers' topological order).
std::vector<const xir::Tensor*> boundary(const xir::Subgraph* subgraph, bool inputs) {
  const auto set = inputs ? subgraph->get_input_tensors() : subgraph->get_output_tensors();
  std::vector<const xir::Tensor*> ordered;
  for (const xir::Op* op : subgraph->get_graph()->topological_sort())
    for (const xir::Tensor* t : set)
      if (t->get_producer() == op) ordered.push_back(t);
  return ordered;
}

std::vector<TensorSpec> own_tensors(const std::vector<const xir::Tensor*>& tensors, int batch,
                                    bool reverse) {
  std::vector<TensorSpec> specs;
  for (const xir::Tensor* t : tensors) {
    std::vector<std::int32_t> shape = t->get_shape();
    CHECK(!shape.empty()) << "tensor " << t->get_name() << " has no batch dimension";
    shape[0] = batch;  // the DPU's batch, not the file's
    TensorSpec spec;
    spec.tensor = xir::Tensor::create(t->get_name(), shape, t->get_data_type());
    spec.tensor->set_attrs(t->get_attrs());
    spec.frame_bytes =
        static_cast<std::size_t>(spec.tensor->get_data_size()) / static_cast<std::size_t>(batch);
    specs.push_back(std::move(spec));
  }
  if (reverse) std::reverse(specs.begin(), specs.end());
  return specs;
}

std::vector<const xir::Tensor*> pointers(const std::vector<TensorSpec>& specs) {
  std::vector<const xir::Tensor*> out;
  for (const auto& s : specs) out.push_back(s.tensor.get());
  return out;
}

// The runner: a RunnerExt (its own DpuBuffers) or, with `plain`, a Runner over the caller's
// host buffers, which it copies as VART's DPU runner does.
template <typename Base>
class DoubleRunner final : public Base {
 public:
  DoubleRunner(const xir::Subgraph* subgraph, const Settings& settings)
      : settings_(settings),
        batch_(settings.batch),
        inputs_(own_tensors(boundary(subgraph, true), settings.batch, settings.reverse_tensors)),
        outputs_(own_tensors(boundary(subgraph, false), settings.batch, settings.reverse_tensors)),
        arithmetic_(settings.null_jobs
                        ? std::nullopt
                        : std::optional(Arithmetic::for_subgraph(subgraph, settings))),
        job_time_(job_time(subgraph, settings)) {
    for (const auto* list : {&inputs_, &outputs_})
      for (const TensorSpec& s : *list) {
        buffers_.push_back(std::make_unique<DpuBuffer>(s.tensor.get(), s.frame_bytes, batch_));
        (list == &inputs_ ? in_buffers_ : out_buffers_).push_back(buffers_.back().get());
      }
  }

  std::vector<const xir::Tensor*> get_input_tensors() override { return pointers(inputs_); }
  std::vector<const xir::Tensor*> get_output_tensors() override { return pointers(outputs_); }
  std::vector<vart::TensorBuffer*> get_inputs() { return {in_buffers_.begin(), in_buffers_.end()}; }
  std::vector<vart::TensorBuffer*> get_outputs() {
    return {out_buffers_.begin(), out_buffers_.end()};
  }

  std::pair<std::uint32_t, int> execute_async(
      const std::vector<vart::TensorBuffer*>& input,
      const std::vector<vart::TensorBuffer*>& output) override {
    const auto start = std::chrono::steady_clock::now();
    int job = 0;
    {
      const std::lock_guard lock(g_mutex);
      job = ++g_job_counter;
      ++g_journal.jobs;
    }
    if (settings_.fault != FaultKind::None && job == settings_.fault_job && claim_fault())
      return {static_cast<std::uint32_t>(job), inject(job)};
    CHECK_EQ(input.size(), in_buffers_.size()) << "execute_async: wrong number of inputs";
    CHECK_EQ(output.size(), out_buffers_.size()) << "execute_async: wrong number of outputs";
    std::vector<std::string> in_names, out_names;
    std::vector<std::vector<std::int8_t>*> in, out;
    std::vector<std::vector<std::int8_t>> scratch;  // plain runner: copies of host buffers
    scratch.reserve((input.size() + output.size()) * static_cast<std::size_t>(batch_));
    for (std::size_t i = 0; i < input.size(); ++i) {
      DpuBuffer* own = match(input[i], in_buffers_);
      in_names.push_back(own->get_tensor()->get_name());
      for (int b = 0; b < batch_; ++b) in.push_back(entry(input[i], own, b, true, scratch));
    }
    for (std::size_t o = 0; o < output.size(); ++o) {
      DpuBuffer* own = match(output[o], out_buffers_);
      out_names.push_back(own->get_tensor()->get_name());
      for (int b = 0; b < batch_; ++b) out.push_back(entry(output[o], own, b, false, scratch));
    }
    // Regroup as [tensor][batch entry].
    std::vector<std::vector<std::vector<std::int8_t>*>> in_g(in_names.size()),
        out_g(out_names.size());
    for (std::size_t i = 0; i < in.size(); ++i)
      in_g[i / static_cast<std::size_t>(batch_)].push_back(in[i]);
    for (std::size_t i = 0; i < out.size(); ++i)
      out_g[i / static_cast<std::size_t>(batch_)].push_back(out[i]);
    run_job(in_names, in_g, out_names, out_g);
    if (!is_ext()) copy_back(output, out_g);
    if (job_time_) wait_until(start + *job_time_);
    return {static_cast<std::uint32_t>(job), 0};
  }

  // The edge DPU ran the job inside execute_async: wait has nothing left to wait for.
  int wait(int, int) override { return 0; }

 private:
  static constexpr bool is_ext() { return std::is_base_of_v<vart::RunnerExt, Base>; }

  DpuBuffer* match(vart::TensorBuffer* given, const std::vector<DpuBuffer*>& own) const {
    for (DpuBuffer* b : own)
      if (is_ext() ? given == b : given->get_tensor()->get_name() == b->get_tensor()->get_name())
        return b;
    LOG(FATAL) << "execute_async: buffer of tensor '" << given->get_tensor()->get_name()
               << "' is not one of this runner's";
    return nullptr;
  }

  // The bytes the DPU works on for batch entry b: the device copy of the runner's own buffer,
  // or (plain runner) a copy of the caller's host buffer.
  std::vector<std::int8_t>* entry(vart::TensorBuffer* given, DpuBuffer* own, int b, bool input,
                                  std::vector<std::vector<std::int8_t>>& scratch) const {
    if (is_ext()) return &own->device(static_cast<std::size_t>(b));
    scratch.emplace_back(own->device(0).size());
    if (input) {
      std::vector<std::int32_t> idx(own->get_tensor()->get_shape().size(), 0);
      idx[0] = b;
      const auto [address, size] = given->data(idx);
      CHECK(address != 0 && size >= scratch.back().size()) << "host buffer too small";
      std::memcpy(scratch.back().data(), reinterpret_cast<const void*>(address),
                  scratch.back().size());
    }
    return &scratch.back();
  }

  void copy_back(const std::vector<vart::TensorBuffer*>& output,
                 std::vector<std::vector<std::vector<std::int8_t>*>>& out_g) const {
    for (std::size_t o = 0; o < output.size(); ++o)
      for (int b = 0; b < batch_; ++b) {
        std::vector<std::int32_t> idx(output[o]->get_tensor()->get_shape().size(), 0);
        idx[0] = b;
        const auto [address, size] = output[o]->data(idx);
        const auto& bytes = *out_g[o][static_cast<std::size_t>(b)];
        CHECK(address != 0 && size >= bytes.size()) << "host buffer too small";
        std::memcpy(reinterpret_cast<void*>(address), bytes.data(), bytes.size());
      }
  }

  void run_job(const std::vector<std::string>& in_names,
               std::vector<std::vector<std::vector<std::int8_t>*>>& in,
               const std::vector<std::string>& out_names,
               std::vector<std::vector<std::vector<std::int8_t>*>>& out) {
    const std::lock_guard lock(job_mutex_);  // one DPU job at a time per runner
    if (!arithmetic_) return;                // null_jobs
    arithmetic_->run(in_names, in, out_names, out, batch_);
  }

  // Whether the fault is still to come: always, or once per marker file (created here).
  bool claim_fault() const {
    if (settings_.fault_marker.empty()) return true;
    const int fd = ::open(settings_.fault_marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  }

  // The injected failure of job `job`: a status to return, or it never returns.
  int inject(int job) const {
    switch (settings_.fault) {
      case FaultKind::Status:
        return settings_.fault_status;
      case FaultKind::Throw:
        throw std::runtime_error("vart double: injected failure in job " + std::to_string(job));
      case FaultKind::Abort:
        LOG(FATAL) << "vart double: injected abort in job " << job;
        break;
      case FaultKind::Hang: {
        // The DPU controller gives up after XLNX_DPU_TIMEOUT ms and ends the process.
        const int timeout_ms = env_int("XLNX_DPU_TIMEOUT", 10'000);
        std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
        LOG(FATAL) << "vart double: DPU timeout after " << timeout_ms << " ms in job " << job;
        break;
      }
      case FaultKind::Stall:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      case FaultKind::None:
        break;
    }
    return 0;
  }

  // The time a job takes with a timing target: `batch` frames of the graph on it.
  static std::optional<std::chrono::nanoseconds> job_time(const xir::Subgraph* subgraph,
                                                          const Settings& settings) {
    if (!settings.timing) return std::nullopt;
    std::string bytes;
    subgraph->get_graph()->serialize_to_string(&bytes);
    PredictOptions options;
    options.io = HostIo::Network;
    const Prediction p =
        predict(parse_xmodel(bytes, "the runner's graph"), *settings.timing, options);
    const double ms = settings.batch * (p.dpu_ms + p.host_ms);
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
  }

  // Sleeps to just before `deadline`, then spins: a sleep alone overshoots by the scheduler's
  // slack (tens of microseconds), which would read as a larger fixed cost.
  static void wait_until(std::chrono::steady_clock::time_point deadline) {
    constexpr auto kSpin = std::chrono::microseconds(300);
    if (std::chrono::steady_clock::now() < deadline - kSpin)
      std::this_thread::sleep_until(deadline - kSpin);
    while (std::chrono::steady_clock::now() < deadline) {
    }
  }

  Settings settings_;
  int batch_;
  std::vector<TensorSpec> inputs_, outputs_;
  std::vector<std::unique_ptr<DpuBuffer>> buffers_;
  std::vector<DpuBuffer*> in_buffers_, out_buffers_;
  std::mutex job_mutex_;
  std::optional<Arithmetic> arithmetic_;  // none with null_jobs: nothing is computed
  std::optional<std::chrono::nanoseconds> job_time_;
};

Settings current_settings() {
  {
    const std::lock_guard lock(g_mutex);
    if (g_settings) return *g_settings;
  }
  return settings_from_environment();
}

}  // namespace

Settings settings_from_environment() {
  Settings s;
  if (const char* file = std::getenv("DPUSHARD_VART_DOUBLE_INT"); file != nullptr && *file)
    s.int_graph = read_xmodel(file);
  if (const char* file = std::getenv("DPUSHARD_VART_DOUBLE_WEIGHTS"); file != nullptr && *file)
    s.weights_graph = read_xmodel(file);
  s.batch = env_int("DPUSHARD_VART_DOUBLE_BATCH", 1);
  if (s.batch < 1) throw Error("DPUSHARD_VART_DOUBLE_BATCH must be at least 1");
  if (const char* fp = std::getenv("DPUSHARD_VART_DOUBLE_FINGERPRINT"); fp != nullptr && *fp)
    s.fingerprint = parse_fingerprint(fp, "DPUSHARD_VART_DOUBLE_FINGERPRINT");
  if (const char* files = std::getenv("DPUSHARD_VART_DOUBLE_INTS"); files != nullptr && *files) {
    std::string list = files;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = std::min(list.find(':', start), list.size());
      if (end > start) s.int_graphs.push_back(read_xmodel(list.substr(start, end - start)));
      start = end + 1;
    }
  }
  s.null_jobs = env_flag("DPUSHARD_VART_DOUBLE_NULL_JOBS");
  if (const char* file = std::getenv("DPUSHARD_VART_DOUBLE_BROKEN_WHILE"); file != nullptr)
    s.broken_while = file;
  s.broken_hangs = env_flag("DPUSHARD_VART_DOUBLE_BROKEN_HANGS");
  if (const char* file = std::getenv("DPUSHARD_VART_DOUBLE_FAULT_MARKER"); file != nullptr)
    s.fault_marker = file;
  s.fault_status = env_int("DPUSHARD_VART_DOUBLE_FAULT_STATUS", s.fault_status);
  s.plain_runner = env_flag("DPUSHARD_VART_DOUBLE_PLAIN");
  s.reverse_tensors = env_flag("DPUSHARD_VART_DOUBLE_REVERSE");
  if (const char* file = std::getenv("DPUSHARD_VART_DOUBLE_TIMING"); file != nullptr && *file)
    s.timing = load_target(file);
  if (const char* fault = std::getenv("DPUSHARD_VART_DOUBLE_FAULT"); fault != nullptr && *fault) {
    std::string text = fault;
    if (const auto at = text.find('@'); at != std::string::npos) {
      s.fault_job = std::stoi(text.substr(at + 1));
      text.resize(at);
    }
    static const std::map<std::string, FaultKind> kinds = {{"status", FaultKind::Status},
                                                           {"throw", FaultKind::Throw},
                                                           {"abort", FaultKind::Abort},
                                                           {"hang", FaultKind::Hang},
                                                           {"stall", FaultKind::Stall}};
    const auto it = kinds.find(text);
    if (it == kinds.end())
      throw Error("DPUSHARD_VART_DOUBLE_FAULT='" + std::string(fault) +
                  "': expected status, throw, abort, hang or stall, optionally @JOB");
    s.fault = it->second;
  }
  return s;
}

namespace {

constexpr const char* kExported[] = {
    "DPUSHARD_VART_DOUBLE_INT",          "DPUSHARD_VART_DOUBLE_INTS",
    "DPUSHARD_VART_DOUBLE_WEIGHTS",      "DPUSHARD_VART_DOUBLE_BATCH",
    "DPUSHARD_VART_DOUBLE_FINGERPRINT",  "DPUSHARD_VART_DOUBLE_PLAIN",
    "DPUSHARD_VART_DOUBLE_REVERSE",      "DPUSHARD_VART_DOUBLE_FAULT",
    "DPUSHARD_VART_DOUBLE_FAULT_STATUS", "DPUSHARD_VART_DOUBLE_FAULT_MARKER",
    "DPUSHARD_VART_DOUBLE_NULL_JOBS",    "DPUSHARD_VART_DOUBLE_BROKEN_WHILE",
    "DPUSHARD_VART_DOUBLE_BROKEN_HANGS"};
std::filesystem::path g_export_dir;  // the exported graphs' folder, under g_mutex

// The settings as DPUSHARD_VART_DOUBLE_* variables (settings_from_environment reads them back).
void export_settings(const Settings& s) {
  std::filesystem::remove_all(g_export_dir);
  static int serial = 0;
  g_export_dir = std::filesystem::temp_directory_path() /
                 ("vart-double-" + std::to_string(::getpid()) + "-" + std::to_string(++serial));
  std::filesystem::create_directories(g_export_dir);
  int files = 0;
  const auto file_of = [&](const Graph& graph) {
    const auto path = g_export_dir / (std::to_string(files++) + ".xmodel");
    write_xmodel(graph, path);
    return path.string();
  };
  for (const char* name : kExported) ::unsetenv(name);
  if (s.int_graph) ::setenv("DPUSHARD_VART_DOUBLE_INT", file_of(*s.int_graph).c_str(), 1);
  std::string list;
  for (const Graph& graph : s.int_graphs) list += (list.empty() ? "" : ":") + file_of(graph);
  if (!list.empty()) ::setenv("DPUSHARD_VART_DOUBLE_INTS", list.c_str(), 1);
  if (s.weights_graph)
    ::setenv("DPUSHARD_VART_DOUBLE_WEIGHTS", file_of(*s.weights_graph).c_str(), 1);
  ::setenv("DPUSHARD_VART_DOUBLE_BATCH", std::to_string(s.batch).c_str(), 1);
  ::setenv("DPUSHARD_VART_DOUBLE_FINGERPRINT", fingerprint_text(s.fingerprint).c_str(), 1);
  ::setenv("DPUSHARD_VART_DOUBLE_PLAIN", s.plain_runner ? "1" : "0", 1);
  ::setenv("DPUSHARD_VART_DOUBLE_REVERSE", s.reverse_tensors ? "1" : "0", 1);
  ::setenv("DPUSHARD_VART_DOUBLE_NULL_JOBS", s.null_jobs ? "1" : "0", 1);
  ::setenv("DPUSHARD_VART_DOUBLE_BROKEN_HANGS", s.broken_hangs ? "1" : "0", 1);
  static const std::map<FaultKind, const char*> names = {{FaultKind::Status, "status"},
                                                         {FaultKind::Throw, "throw"},
                                                         {FaultKind::Abort, "abort"},
                                                         {FaultKind::Hang, "hang"},
                                                         {FaultKind::Stall, "stall"}};
  if (s.fault != FaultKind::None)
    ::setenv("DPUSHARD_VART_DOUBLE_FAULT",
             (std::string(names.at(s.fault)) + "@" + std::to_string(s.fault_job)).c_str(), 1);
  ::setenv("DPUSHARD_VART_DOUBLE_FAULT_STATUS", std::to_string(s.fault_status).c_str(), 1);
  if (!s.fault_marker.empty())
    ::setenv("DPUSHARD_VART_DOUBLE_FAULT_MARKER", s.fault_marker.c_str(), 1);
  if (!s.broken_while.empty())
    ::setenv("DPUSHARD_VART_DOUBLE_BROKEN_WHILE", s.broken_while.c_str(), 1);
}

}  // namespace

void set_settings(Settings settings) {
  const std::lock_guard lock(g_mutex);
  export_settings(settings);
  g_settings = std::move(settings);
}

void clear_settings() {
  const std::lock_guard lock(g_mutex);
  g_settings.reset();
  for (const char* name : kExported) ::unsetenv(name);
  std::error_code ignored;
  std::filesystem::remove_all(g_export_dir, ignored);
  g_export_dir.clear();
}

Journal journal() {
  const std::lock_guard lock(g_mutex);
  return g_journal;
}

void clear_journal() {
  const std::lock_guard lock(g_mutex);
  g_journal = {};
  g_job_counter = 0;
}

}  // namespace dpushard::vart_double

// VART's entry points, which the runner library defines on a board (dpu_runner.cpp).
namespace vart {

std::unique_ptr<Runner> Runner::create_runner(const xir::Subgraph* subgraph,
                                              const std::string& mode) {
  using dpushard::vart_double::DoubleRunner;
  CHECK(subgraph != nullptr) << "create_runner: no subgraph";
  // VART checks the subgraph with UNI_LOG_CHECK, which aborts: so does the double.
  CHECK(subgraph->has_attr("device") && subgraph->get_attr<std::string>("device") == "DPU")
      << "create_runner: subgraph '" << subgraph->get_name() << "' is not a DPU subgraph";
  CHECK(mode == "run" || mode.empty()) << "create_runner: the double has no mode '" << mode << "'";
  dpushard::vart_double::Settings settings;
  try {
    settings = dpushard::vart_double::current_settings();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("vart double: ") + e.what());
  }
  {
    const std::lock_guard lock(dpushard::vart_double::g_mutex);
    ++dpushard::vart_double::g_journal.runners;
  }
  if (!settings.broken_while.empty()) {
    if (std::FILE* broken = std::fopen(settings.broken_while.c_str(), "r+")) {
      std::fseek(broken, 0, SEEK_END);
      std::fputs("refused a runner\n", broken);
      std::fclose(broken);
      while (settings.broken_hangs) std::this_thread::sleep_for(std::chrono::seconds(1));
      throw std::runtime_error("vart double: the DPU cannot be opened (" + settings.broken_while +
                               " exists)");
    }
  }
  // The runner computes from the `_int` fragment or from the subgraph's ops; a subgraph it
  // cannot compute (weights not in the file, an op it does not know) fails here, as
  // create_runner's own checks do, but as an exception the backend reports in one line.
  try {
    if (settings.plain_runner) return std::make_unique<DoubleRunner<Runner>>(subgraph, settings);
    return std::make_unique<DoubleRunner<RunnerExt>>(subgraph, settings);
  } catch (const dpushard::Error& e) {
    throw std::runtime_error(std::string("vart double: ") + e.what());
  }
}

std::unique_ptr<Runner> Runner::create_runner_with_attrs(const xir::Subgraph* subgraph,
                                                         xir::Attrs*) {
  return create_runner(subgraph, "run");
}

std::vector<std::unique_ptr<Runner>> Runner::create_runner(const std::string& model_directory) {
  throw std::runtime_error("vart double: no DPUv1 model directories ('" + model_directory + "')");
}

Runner::TensorFormat Runner::get_tensor_format() { return TensorFormat::NHWC; }

}  // namespace vart

// The double's stand-in for `xdputil query` (dpu_query.hpp; on a board dpu_query_xdputil.cpp).
dpushard::DeviceInfo dpushard::vart_detail::query_dpu() {
  const dpushard::vart_double::Settings settings = dpushard::vart_double::current_settings();
  return {settings.fingerprint, static_cast<std::uint32_t>(settings.batch)};
}

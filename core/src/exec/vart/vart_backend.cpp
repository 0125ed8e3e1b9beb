// The `vart` backend: compiled fragments on the DPU through VART (dpushard/exec/vart_backend.hpp,
// docs/vart.md). No DPU runs in this repository's CI: tests/vart compiles this file against
// the real VART/XIR headers (3.5 and 3.0) and runs it on a link-time double of VART.
//
// Per frame: dpushard's int8 NHWC inputs are copied into the runner's input buffers batch by
// batch (TensorBuffer::data({b, 0, ...})), synced, run with execute_async + wait, and the
// outputs are copied back. A runner serves one caller at a time; load() opens
// BackendOptions::threads of them.

#include "dpushard/exec/vart_backend.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <vart/runner.hpp>
#include <vart/runner_ext.hpp>
#include <vart/tensor_buffer.hpp>
#include <xir/graph/graph.hpp>
#include <xir/graph/subgraph.hpp>
#include <xir/tensor/tensor.hpp>
#include <xir/util/data_type.hpp>

#include "dpu_binding.hpp"
#include "dpu_child.hpp"
#include "dpu_query.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "host_tensor_buffer.hpp"
#include "vart_description.hpp"

namespace dpushard {
namespace {

using vart_detail::DpuBinding;
using vart_detail::DpuTensorBinding;

// A DPU frame takes milliseconds; a job still running after a minute is a hung DPU.
constexpr int kWaitTimeoutMs = 60'000;

// VART and XIR messages may span lines (glog); dpushard errors are one line.
std::string one_line(const char* what) {
  std::string text = what;
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// One runner tensor bound to one dpushard tensor.
struct Port {
  vart::TensorBuffer* buffer = nullptr;
  std::size_t frame_bytes = 0;  // one batch entry: dense int8 NHWC
  std::size_t rank = 0;
  int fix_point = 0;  // the runner tensor's `fix_point` attribute
};

struct Slot {
  std::unique_ptr<vart::Runner> runner;
  std::vector<std::unique_ptr<vart_detail::HostTensorBuffer>> owned;  // when not a RunnerExt
  std::vector<vart::TensorBuffer*> inputs;   // the runner's order, for execute_async
  std::vector<vart::TensorBuffer*> outputs;  // the runner's order
  std::vector<Port> in_ports;                // the binding's (graph's) order
  std::vector<Port> out_ports;
  std::int64_t batch = 1;  // frames the runner takes per job
  bool retired = false;    // a job failed or hung: its buffers may still be in use
};

class VartBackend final : public Backend, public vart_detail::InPlaceBackend {
 public:
  explicit VartBackend(BackendOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "vart"; }

  void load(const Graph& graph) override {
    {
      const std::lock_guard lock(mutex_);
      slots_.clear();
      free_.clear();
      runner_batch_ = 0;
    }
    xgraph_.reset();
    where_ = "vart: graph '" + graph.name() + "'";
    binding_ = vart_detail::bind_dpu_subgraph(graph);
    frames_ = common_batch();

    try {
      xgraph_ = xir::Graph::deserialize_from_string(serialize_xmodel(graph));
    } catch (const std::exception& e) {
      throw Error(where_ + ": XIR cannot read it: " + one_line(e.what()));
    }
    if (!xgraph_) throw Error(where_ + ": XIR returned no graph");
    const xir::Subgraph* subgraph = dpu_subgraph();

    std::vector<Slot> slots;
    for (int i = 0; i < std::max(1, options_.threads); ++i) slots.push_back(open_slot(subgraph));
    const std::lock_guard lock(mutex_);
    runner_batch_ = static_cast<std::uint32_t>(slots.front().batch);
    slots_ = std::move(slots);
    for (std::size_t i = 0; i < slots_.size(); ++i) free_.push_back(i);
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    check_inputs(inputs);
    std::vector<const std::int8_t*> in;
    for (const QTensor& t : inputs) in.push_back(t.data.data());
    std::vector<QTensor> outputs;
    std::vector<std::int8_t*> out;
    for (const DpuTensorBinding& binding : binding_.outputs) {
      QTensor t;
      t.name = binding.name;
      t.shape = binding.shape;
      t.data.resize(static_cast<std::size_t>(element_count(binding.shape)));
      outputs.push_back(std::move(t));
    }
    for (QTensor& t : outputs) out.push_back(t.data.data());
    const std::vector<int> fix_points = run_on(in, out);
    for (std::size_t o = 0; o < outputs.size(); ++o) outputs[o].fix_point = fix_points[o];
    return outputs;
  }

  std::uint32_t runner_batch() const override { return runner_batch_; }

  // A frame read from and written to the caller's memory (the DPU process's shared memory):
  // each runner buffer is filled straight from it and emptied straight into it.
  std::vector<int> run_on(const std::vector<const std::int8_t*>& inputs,
                          const std::vector<std::int8_t*>& outputs) override {
    Lease lease(*this);
    Slot& slot = lease.slot();
    if (inputs.size() != slot.in_ports.size() || outputs.size() != slot.out_ports.size())
      throw Error(where_ + ": " + std::to_string(inputs.size()) + " inputs and " +
                  std::to_string(outputs.size()) + " outputs given, the fragment has " +
                  std::to_string(slot.in_ports.size()) + " and " +
                  std::to_string(slot.out_ports.size()));
    for (std::int64_t first = 0; first < frames_; first += slot.batch) {
      const std::int64_t count = std::min(slot.batch, frames_ - first);
      for (std::size_t i = 0; i < inputs.size(); ++i)
        copy_in(slot.in_ports[i], inputs[i], first, count);
      execute(lease);
      for (std::size_t o = 0; o < outputs.size(); ++o)
        copy_out(slot.out_ports[o], outputs[o], first, count);
    }
    std::vector<int> fix_points;
    for (const Port& port : slot.out_ports) fix_points.push_back(port.fix_point);
    return fix_points;
  }

 private:
  // Exclusive use of one runner for the duration of a frame.
  class Lease {
   public:
    explicit Lease(VartBackend& backend) : backend_(backend) {
      std::unique_lock lock(backend_.mutex_);
      if (backend_.slots_.empty()) throw Error("vart: run() before load()");
      backend_.available_.wait(lock, [&] { return !backend_.free_.empty() || all_retired(); });
      if (backend_.free_.empty())
        throw Error(backend_.where_ +
                    ": every DPU runner was retired after a failed job; load the fragment again");
      index_ = backend_.free_.back();
      backend_.free_.pop_back();
    }
    ~Lease() {
      {
        const std::lock_guard lock(backend_.mutex_);
        if (!slot().retired) backend_.free_.push_back(index_);
      }
      backend_.available_.notify_all();
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    Slot& slot() { return backend_.slots_[index_]; }
    // The runner's buffers may still be written by a job we gave up on: never reuse it.
    void retire() { slot().retired = true; }

   private:
    bool all_retired() const {
      return std::all_of(backend_.slots_.begin(), backend_.slots_.end(),
                         [](const Slot& s) { return s.retired; });
    }
    VartBackend& backend_;
    std::size_t index_ = 0;
  };

  // Every bound tensor must carry the same number of frames (the batch dimension).
  std::int64_t common_batch() const {
    std::int64_t batch = -1;
    for (const auto* list : {&binding_.inputs, &binding_.outputs})
      for (const DpuTensorBinding& t : *list) {
        if (t.shape.empty() || t.shape[0] < 1)
          throw Error(where_ + ": tensor '" + t.name + "' has shape " + shape_text(t.shape) +
                      ", expected a batch dimension first");
        if (batch >= 0 && t.shape[0] != batch)
          throw Error(where_ + ": tensor '" + t.name + "' has batch " + std::to_string(t.shape[0]) +
                      ", other tensors " + std::to_string(batch));
        batch = t.shape[0];
      }
    return batch;
  }

  // The DPU subgraph as XIR sees it (the flow of VITIS_AI.md section 3).
  const xir::Subgraph* dpu_subgraph() const {
    const xir::Graph& graph = *xgraph_;
    const xir::Subgraph* root = graph.get_root_subgraph();
    std::vector<const xir::Subgraph*> dpus;
    for (const xir::Subgraph* child : root->children_topological_sort())
      if (child->has_attr("device") && child->get_attr<std::string>("device") == "DPU")
        dpus.push_back(child);
    if (dpus.size() != 1 || dpus.front()->get_name() != binding_.subgraph)
      throw Error(where_ + ": XIR finds " + std::to_string(dpus.size()) +
                  " DPU subgraphs, dpushard found one named '" + binding_.subgraph + "'");
    return dpus.front();
  }

  Slot open_slot(const xir::Subgraph* subgraph) const {
    Slot slot;
    try {
      slot.runner = vart::Runner::create_runner(subgraph, "run");
    } catch (const std::exception& e) {
      throw Error(where_ + ": VART cannot open a DPU runner on subgraph '" + binding_.subgraph +
                  "': " + one_line(e.what()));
    }
    if (!slot.runner)
      throw Error(where_ + ": VART returned no runner for subgraph '" + binding_.subgraph + "'");
    if (auto* ext = dynamic_cast<vart::RunnerExt*>(slot.runner.get())) {
      slot.inputs = ext->get_inputs();  // the runner's own (device-visible) buffers
      slot.outputs = ext->get_outputs();
    } else {
      for (const xir::Tensor* tensor : slot.runner->get_input_tensors()) {
        slot.owned.push_back(std::make_unique<vart_detail::HostTensorBuffer>(tensor));
        slot.inputs.push_back(slot.owned.back().get());
      }
      for (const xir::Tensor* tensor : slot.runner->get_output_tensors()) {
        slot.owned.push_back(std::make_unique<vart_detail::HostTensorBuffer>(tensor));
        slot.outputs.push_back(slot.owned.back().get());
      }
    }
    slot.batch = 0;
    slot.in_ports = bind_ports(binding_.inputs, slot.inputs, "input", slot.batch);
    slot.out_ports = bind_ports(binding_.outputs, slot.outputs, "output", slot.batch);
    return slot;
  }

  // Finds each wanted tensor among the runner's buffers and checks type, shape, fix point.
  std::vector<Port> bind_ports(const std::vector<DpuTensorBinding>& wanted,
                               const std::vector<vart::TensorBuffer*>& buffers,
                               const std::string& kind, std::int64_t& batch) const {
    std::vector<std::string> names;
    for (const vart::TensorBuffer* buffer : buffers)
      names.push_back(buffer->get_tensor()->get_name());
    std::string listed;
    for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
    if (buffers.size() != wanted.size())
      throw Error(where_ + ": the DPU runner has " + std::to_string(buffers.size()) + " " + kind +
                  " tensors (" + listed + "), the fragment " + std::to_string(wanted.size()));
    std::vector<Port> ports;
    for (const DpuTensorBinding& w : wanted) {
      const auto it = std::find(names.begin(), names.end(), w.tensor);
      if (it == names.end())
        throw Error(where_ + ": the DPU runner has no " + kind + " tensor '" + w.tensor +
                    "' (it has: " + listed + ")");
      vart::TensorBuffer* buffer = buffers[static_cast<std::size_t>(it - names.begin())];
      const xir::Tensor* tensor = buffer->get_tensor();
      const std::string what =
          where_ + ": " + kind + " '" + w.name + "' (DPU tensor '" + w.tensor + "')";

      const xir::DataType& type = tensor->get_data_type();
      if (type.type != xir::DataType::XINT || type.bit_width != 8)
        throw Error(what + " is " + type.to_string() + ", expected xint8");
      const std::vector<std::int32_t> shape = tensor->get_shape();
      bool same = shape.size() == w.shape.size() && !shape.empty() && shape[0] >= 1;
      for (std::size_t d = 1; same && d < shape.size(); ++d) same = shape[d] == w.shape[d];
      if (!same)
        throw Error(what + " has shape " + shape_text({shape.begin(), shape.end()}) +
                    " on the DPU, " + shape_text(w.shape) + " in the graph");
      if (batch != 0 && shape[0] != batch)
        throw Error(what + " has batch " + std::to_string(shape[0]) + ", other DPU tensors " +
                    std::to_string(batch));
      batch = shape[0];

      Port port;
      port.buffer = buffer;
      port.rank = shape.size();
      port.frame_bytes = 1;
      for (std::size_t d = 1; d < shape.size(); ++d)
        port.frame_bytes *= static_cast<std::size_t>(shape[d]);
      const auto data_size = static_cast<std::size_t>(tensor->get_data_size());
      if (data_size != port.frame_bytes * static_cast<std::size_t>(shape[0]))
        throw Error(what + " takes " + std::to_string(data_size) + " bytes for " +
                    std::to_string(tensor->get_element_num()) +
                    " values: strided DPU tensors are not supported");
      if (!tensor->has_attr("fix_point")) throw Error(what + " has no fix_point attribute");
      port.fix_point = tensor->get_attr<int>("fix_point");
      if (kind == "input" && port.fix_point != w.fix_point)
        throw Error(what + " has fix_point " + std::to_string(port.fix_point) + " on the DPU, " +
                    std::to_string(w.fix_point) + " in the graph");
      ports.push_back(port);
    }
    return ports;
  }

  void check_inputs(const std::vector<QTensor>& inputs) const {
    check_input_count(where_, inputs.size(), binding_.inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const DpuTensorBinding& spec = binding_.inputs[i];
      check_input(where_, spec.name, spec.shape, spec.fix_point, inputs[i]);
    }
  }

  // The address of batch entry `b` of a runner buffer, checked to hold a whole frame.
  std::int8_t* frame_address(const Port& port, std::int64_t b) const {
    std::vector<std::int32_t> index{static_cast<std::int32_t>(b)};  // rank >= 1 (bind_ports)
    index.resize(port.rank, 0);
    const auto [address, bytes] = port.buffer->data(index);
    if (address == 0 || bytes < port.frame_bytes)
      throw Error(where_ + ": DPU buffer of tensor '" + port.buffer->get_tensor()->get_name() +
                  "' gives " + std::to_string(bytes) + " bytes at batch " + std::to_string(b) +
                  ", a frame needs " + std::to_string(port.frame_bytes));
    return reinterpret_cast<std::int8_t*>(address);
  }

  void copy_in(const Port& port, const std::int8_t* data, std::int64_t first,
               std::int64_t count) const {
    for (std::int64_t b = 0; b < count; ++b)
      std::memcpy(frame_address(port, b),
                  data + static_cast<std::size_t>(first + b) * port.frame_bytes, port.frame_bytes);
    // As VART's samples do: flush the cache over one batch entry from the buffer's start.
    port.buffer->sync_for_write(0, port.frame_bytes);
  }

  void copy_out(const Port& port, std::int8_t* data, std::int64_t first, std::int64_t count) const {
    port.buffer->sync_for_read(0, port.frame_bytes);
    for (std::int64_t b = 0; b < count; ++b)
      std::memcpy(data + static_cast<std::size_t>(first + b) * port.frame_bytes,
                  frame_address(port, b), port.frame_bytes);
  }

  void execute(Lease& lease) const {
    Slot& slot = lease.slot();
    std::pair<std::uint32_t, int> job{0, 0};
    try {
      job = slot.runner->execute_async(slot.inputs, slot.outputs);
    } catch (const std::exception& e) {
      lease.retire();
      throw Error(where_ + ": the DPU job did not start: " + one_line(e.what()));
    }
    if (job.second != 0) {
      lease.retire();
      throw Error(where_ + ": the DPU job did not start (VART status " +
                  std::to_string(job.second) + ")");
    }
    int status = 0;
    try {
      status = slot.runner->wait(static_cast<int>(job.first), kWaitTimeoutMs);
    } catch (const std::exception& e) {
      lease.retire();
      throw Error(where_ + ": DPU job " + std::to_string(job.first) +
                  " failed: " + one_line(e.what()));
    }
    if (status != 0) {
      lease.retire();
      throw Error(where_ + ": DPU job " + std::to_string(job.first) +
                  " failed or did not finish within " + std::to_string(kWaitTimeoutMs) +
                  " ms (VART status " + std::to_string(status) + "); its runner is retired");
    }
  }

  BackendOptions options_;
  std::string where_ = "vart";
  DpuBinding binding_;
  std::int64_t frames_ = 1;
  std::uint32_t runner_batch_ = 0;      // the first runner's batch (every runner has the DPU's)
  std::unique_ptr<xir::Graph> xgraph_;  // outlives the runners, which point into it

  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_;
};

}  // namespace

std::unique_ptr<Backend> make_vart_backend_in_process(const BackendOptions& options) {
  return std::make_unique<VartBackend>(options);
}

std::unique_ptr<Backend> make_vart_backend(const BackendOptions& options) {
  return std::make_unique<vart_detail::SupervisedBackend>(options);
}

void register_vart_backend() {
  BackendDescriptor d = vart_backend_description();
  d.make = &make_vart_backend;
  d.probe = [](const BackendOptions&) { return vart_detail::query_dpu(); };
  d.run_command = &run_dpu_child;
  register_backend(std::move(d));
}

}  // namespace dpushard

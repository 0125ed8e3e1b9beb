// A fragment's bounded frame queue and its statistics.

#include "fragment_runner.hpp"

#include <algorithm>

#include "dpushard/graph/shape.hpp"

namespace dpushard::net {

FragmentRunner::FragmentRunner(FragmentAssignment assignment, std::unique_ptr<Backend> backend,
                               std::vector<QTensor> input_specs, std::size_t output_count)
    : assignment_(std::move(assignment)),
      backend_(std::move(backend)),
      specs_(std::move(input_specs)),
      output_count_(output_count) {
  if (assignment_.outputs.size() != output_count)
    throw ProtocolError(ErrorCode::kBadFragment, "fragment '" + assignment_.name + "' has " +
                                                     std::to_string(output_count) +
                                                     " outputs but its routing lists " +
                                                     std::to_string(assignment_.outputs.size()));
}

void FragmentRunner::accept(std::uint64_t frame, std::uint32_t index, QTensor&& tensor,
                            std::uint32_t capacity) {
  const std::string where = "fragment '" + name() + "' frame " + std::to_string(frame);
  if (index >= specs_.size())
    throw ProtocolError(ErrorCode::kMalformed, where + ": input index " + std::to_string(index) +
                                                   " of " + std::to_string(specs_.size()));
  const QTensor& spec = specs_[index];
  if (tensor.shape != spec.shape || tensor.fix_point != spec.fix_point)
    throw ProtocolError(ErrorCode::kMalformed, where + " input '" + spec.name + "': got " +
                                                   shape_text(tensor.shape) + " fix_point " +
                                                   std::to_string(tensor.fix_point) +
                                                   ", expected " + shape_text(spec.shape) +
                                                   " fix_point " + std::to_string(spec.fix_point));
  auto it = waiting_.find(frame);
  if (it == waiting_.end()) {
    if (ready_.count(frame) != 0)
      throw ProtocolError(ErrorCode::kMalformed, where + ": inputs arrived after it was complete");
    if (waiting_.size() + ready_.size() + (running_ ? 1 : 0) >= capacity)
      throw ProtocolError(ErrorCode::kQueueFull, where + ": the queue already holds " +
                                                     std::to_string(capacity) + " frames");
    it = waiting_.emplace(frame, Waiting{std::vector<std::optional<QTensor>>(specs_.size()), 0})
             .first;
  }
  Waiting& waiting = it->second;
  if (waiting.inputs[index])
    throw ProtocolError(ErrorCode::kMalformed, where + " input '" + spec.name + "' arrived twice");
  tensor.name = spec.name;
  waiting.inputs[index] = std::move(tensor);
  ++waiting.received;
  max_queue_ = std::max(max_queue_, static_cast<std::uint32_t>(waiting_.size() + ready_.size()));
  if (waiting.received < specs_.size()) return;
  std::vector<QTensor> inputs;
  inputs.reserve(specs_.size());
  for (auto& input : waiting.inputs) inputs.push_back(std::move(*input));
  waiting_.erase(it);
  ready_.emplace(frame, ReadyFrame{frame, std::move(inputs), std::chrono::steady_clock::now()});
}

std::vector<QTensor> FragmentRunner::run(const std::vector<QTensor>& inputs,
                                         std::chrono::steady_clock::time_point ready,
                                         BufferPool& buffers) {
  const FrameMemory* memory = backend_->frame_memory();
  bool in_place = memory != nullptr && memory->inputs.size() == inputs.size();
  for (std::size_t i = 0; in_place && i < inputs.size(); ++i)
    in_place = inputs[i].data.size() == memory->inputs[i].size();
  if (!in_place) return backend_->run_ready(inputs, ready);  // run() words any mismatch
  for (std::size_t i = 0; i < inputs.size(); ++i)
    std::copy(inputs[i].data.begin(), inputs[i].data.end(), memory->inputs[i].begin());
  std::vector<QTensor> outputs = backend_->run_in_place();
  for (std::size_t o = 0; o < outputs.size() && o < memory->outputs.size(); ++o) {
    outputs[o].data = buffers.take(memory->outputs[o].size());
    std::copy(memory->outputs[o].begin(), memory->outputs[o].end(), outputs[o].data.begin());
  }
  return outputs;
}

FragmentRunner::ReadyFrame FragmentRunner::take_ready() {
  auto first = ready_.begin();
  ReadyFrame taken = std::move(first->second);
  ready_.erase(first);
  running_ = true;
  return taken;
}

void FragmentRunner::finished(std::uint64_t busy_ns, std::uint64_t cpu_ns) {
  running_ = false;
  ++frames_;
  busy_ns_ += busy_ns;
  cpu_ns_ += cpu_ns;
}

std::vector<QTensor> FragmentRunner::drain() {
  std::vector<QTensor> tensors;
  for (auto& [frame, waiting] : waiting_)
    for (auto& input : waiting.inputs)
      if (input) tensors.push_back(std::move(*input));
  for (auto& [frame, ready] : ready_)
    for (auto& input : ready.inputs) tensors.push_back(std::move(input));
  waiting_.clear();
  ready_.clear();
  return tensors;
}

void FragmentRunner::forget(std::uint64_t frame) {
  waiting_.erase(frame);
  ready_.erase(frame);
}

FragmentStats FragmentRunner::stats() const {
  return FragmentStats{assignment_.slot, frames_, busy_ns_, max_queue_, cpu_ns_};
}

}  // namespace dpushard::net

namespace dpushard::net {

PreparedFragment FragmentRunner::release(int threads) {
  return PreparedFragment{std::move(backend_), std::move(specs_), output_count_, threads};
}

}  // namespace dpushard::net

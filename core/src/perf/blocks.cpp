// A prediction's op times summed per block of the model (dpushard/perf/perf.hpp).
#include <cctype>
#include <string>
#include <unordered_map>

#include "dpushard/perf/perf.hpp"

namespace dpushard {
namespace {

bool is_block_part(std::string_view part) {
  if (part.size() <= 5 || part.substr(0, 5) != "block") return false;
  for (char c : part.substr(5))
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  return true;
}

}  // namespace

std::string block_of(std::string_view op_name) {
  std::size_t start = 0;
  while (start < op_name.size() && op_name[start] == '/') ++start;  // "/layer1/..." (ONNX)
  std::size_t end = start;
  std::string_view first;
  while (end <= op_name.size()) {
    const std::size_t slash = op_name.find('/', end);
    const std::size_t part_end = slash == std::string_view::npos ? op_name.size() : slash;
    const std::string_view part = op_name.substr(end, part_end - end);
    if (first.empty()) first = op_name.substr(start, part_end - start);
    if (is_block_part(part)) return std::string(op_name.substr(start, part_end - start));
    if (slash == std::string_view::npos) break;
    end = slash + 1;
  }
  return std::string(first);
}

std::vector<BlockTiming> time_per_block(const Prediction& prediction) {
  std::vector<BlockTiming> blocks;
  std::unordered_map<std::string, std::size_t> index;
  for (const OpTiming& t : prediction.ops) {
    const std::string key = block_of(t.op);
    auto [it, added] = index.try_emplace(key, blocks.size());
    if (added) blocks.push_back(BlockTiming{key});
    BlockTiming& b = blocks[it->second];
    ++b.ops;
    (t.engine == Device::Dpu ? b.dpu_ms : b.cpu_ms) += t.ms;
  }
  return blocks;
}

}  // namespace dpushard

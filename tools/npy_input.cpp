#include "npy_input.hpp"

#include <cmath>
#include <sstream>

#include "dpushard/error.hpp"
#include "dpushard/npy.hpp"

namespace dpushard::cli {
namespace {

std::string numpy_shape_text(const std::vector<std::int64_t>& shape) {
  std::ostringstream s;
  s << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? "," : "") << shape[i];
  s << (shape.size() == 1 ? ",)" : ")");
  return s.str();
}

}  // namespace

QTensor input_from_npy(const std::string& path, const InputSpec& spec) {
  const NpyArray array = read_npy(path);
  if (array.type != NpyArray::Type::Int8 && array.type != NpyArray::Type::Float32)
    throw Error(path + ": dtype '" + npy_descr(array.type) +
                "' is not supported here (int8 '|i1' as is, or float32 '<f4' to quantize)");
  if (array.shape != spec.shape)
    throw Error(path + ": shape " + numpy_shape_text(array.shape) + " does not match input '" +
                spec.name + "' " + numpy_shape_text(spec.shape) +
                " (int8 as is, or float32 to quantize at fix point " +
                std::to_string(spec.fix_point) + ")");
  QTensor t{spec.name, spec.shape, spec.fix_point, {}};
  if (array.type == NpyArray::Type::Int8) {
    t.data = array.int8_values(path);
    return t;
  }
  const std::vector<float> values = array.to_float();
  t.data.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]))
      throw Error(path + ": value at index " + std::to_string(i) + " is not finite");
    t.data.push_back(quantize(double{values[i]}, spec.fix_point, spec.round_mode));
  }
  return t;
}

std::vector<QTensor> inputs_from_npy(const std::vector<std::string>& paths,
                                     const std::vector<InputSpec>& specs, const std::string& who) {
  if (paths.size() != specs.size())
    throw Error(who + ": the model has " + std::to_string(specs.size()) + " input" +
                (specs.size() == 1 ? "" : "s") + ", got " + std::to_string(paths.size()) +
                " --input file" + (paths.size() == 1 ? "" : "s"));
  std::vector<QTensor> inputs;
  for (std::size_t i = 0; i < specs.size(); ++i)
    inputs.push_back(input_from_npy(paths[i], specs[i]));
  return inputs;
}

}  // namespace dpushard::cli

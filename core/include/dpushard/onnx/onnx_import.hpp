#pragma once
// ONNX import: reads a model as torch.onnx.export writes it (opsets 11 to 17) and maps
// it onto the float form of the dpushard IR: the op types and attributes of docs/ir.md,
// NHWC activations, OHWI conv weights, float32 `const` weights and no `fix` ops yet.
// quantize() (quantize.hpp) turns that graph into the `_int` form. See docs/import.md.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

struct OnnxInputInfo {
  std::string name;                      // ONNX input name = the IR `data` op's name
  std::vector<std::int64_t> onnx_shape;  // as declared (dynamic batch taken as 1)
  std::vector<std::int64_t> ir_shape;    // NHWC for 4-D (NCHW) inputs, else the same
};

struct OnnxImport {
  Graph graph;  // float IR graph: data, const and float-domain ops, no fix ops
  std::int64_t opset = 0;
  std::int64_t onnx_nodes = 0;            // nodes in the file
  std::map<std::string, int> mapped_ops;  // ONNX op type -> nodes of that type mapped
  std::vector<OnnxInputInfo> inputs;      // in ONNX order (= graph.inputs() order)
  std::vector<std::string> outputs;       // ONNX output names, in order
};

// Reads and maps an ONNX file. Any problem (unreadable file, unsupported opset, op or
// attribute, dynamic shape) throws dpushard::Error with one line naming the file and the
// node: "model.onnx: unsupported op 'NonMaxSuppression' (node '/nms')".
OnnxImport import_onnx(const std::filesystem::path& path);
OnnxImport import_onnx_bytes(const std::string& bytes, const std::string& origin);

// Vitis AI's rewrite of sigmoid-family activations for the DPUCZDX8G (vai_q_pytorch's
// convert_sigmoid_to_hsigmoid and convert_silu_to_hswish, vai_q_tensorflow2's default):
// mul(x, sigmoid(x)) (SiLU, swish) becomes hard-swish(x), every other sigmoid becomes
// hard-sigmoid; both run on the DPU, sigmoid does not. On a float IR graph (before
// quantize()); `dpushard import --hard-sigmoid`. See docs/import.md.
struct HardSigmoidRewrite {
  int sigmoid_to_hard_sigmoid = 0;
  int silu_to_hard_swish = 0;
};
HardSigmoidRewrite convert_sigmoid_to_hard(Graph& float_graph);

// The ONNX op types the importer maps onto IR ops when their inputs are activations, in name
// order: the converter's handler table. Ops whose inputs are all constant are folded instead
// (docs/import.md lists both); a docs test checks that docs/import.md names each of these.
std::vector<std::string> supported_onnx_ops();

}  // namespace dpushard

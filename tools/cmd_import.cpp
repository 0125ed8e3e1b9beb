// dpushard import MODEL.onnx: ONNX -> float IR graph -> calibrated power-of-two
// quantization -> `_int` xmodel (docs/import.md).

#include <iostream>
#include <memory>
#include <string>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/error.hpp"
#ifdef DPUSHARD_HAVE_ONNX_IMPORT
#include "dpushard/onnx_import.hpp"
#endif
#include "dpushard/quantize.hpp"
#include "dpushard/xmodel.hpp"

namespace dpushard::cli {
namespace {

struct ImportOptions {
  std::string model;
  std::string calib_dir;
  int calib_random = 0;
  std::uint64_t seed = 1;
  std::string output;
  bool json = false;
  // Sigmoid -> hard-sigmoid and SiLU -> hard-swish before calibration: the default, as
  // Vitis AI's quantizers do for a DPUCZDX8G (docs/import.md); --keep-sigmoid turns it off.
  bool keep_sigmoid = false;
  bool hard_sigmoid = false;  // --hard-sigmoid: the default said explicitly
};

#ifdef DPUSHARD_HAVE_ONNX_IMPORT
constexpr int kDefaultRandomSamples = 8;

nlohmann::json histogram(const std::map<int, int>& h) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [fp, n] : h) out[std::to_string(fp)] = n;
  return out;
}

std::string range_text(const std::map<int, int>& h) {
  if (h.empty()) return "-";
  return std::to_string(h.begin()->first) + ".." + std::to_string(h.rbegin()->first);
}

int run_import(const ImportOptions& o) {
  if (!o.calib_dir.empty() && o.calib_random > 0)
    throw Error("import: give --calib or --calib-random, not both");
  OnnxImport imported = import_onnx(o.model);
  HardSigmoidRewrite rewrite;
  if (!o.keep_sigmoid) rewrite = convert_sigmoid_to_hard(imported.graph);
  CalibrationSet calibration;
  std::string source;
  if (!o.calib_dir.empty()) {
    calibration = load_calibration(imported.graph, o.calib_dir);
    source = "dir";
  } else {
    const int n = o.calib_random > 0 ? o.calib_random : kDefaultRandomSamples;
    if (o.calib_random <= 0 && !o.json)
      std::cerr << "import: no calibration data given, using " << n
                << " random inputs (--calib DIR gives better fix points)\n";
    calibration = random_calibration(imported.graph, n, o.seed);
    source = "random";
  }
  QuantizeReport report;
  const Graph quantized = quantize(imported.graph, calibration, &report);
  write_xmodel(quantized, o.output);

  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const auto& in : imported.inputs) {
    const auto fp = fix_point_of(quantized, in.name + "_fix");
    inputs.push_back({{"name", in.name},
                      {"onnx_shape", in.onnx_shape},
                      {"shape", in.ir_shape},
                      {"fix_point", fp.value_or(0)}});
  }
  for (const Op* out : quantized.outputs())
    outputs.push_back({{"name", out->name},
                       {"shape", out->output.shape},
                       {"fix_point", fix_point_of(quantized, out->name).value_or(0)}});
  int mapped = 0;
  for (const auto& [type, n] : imported.mapped_ops) mapped += n;
  if (o.json) {
    print_json({{"model", o.model},
                {"output", o.output},
                {"opset", imported.opset},
                {"onnx_nodes", imported.onnx_nodes},
                {"mapped_nodes", mapped},
                {"mapped_ops", imported.mapped_ops},
                {"ir_ops", quantized.size()},
                {"fix_ops", report.fix_ops},
                {"hard_sigmoid",
                 {{"applied", !o.keep_sigmoid},
                  {"sigmoid_to_hard_sigmoid", rewrite.sigmoid_to_hard_sigmoid},
                  {"silu_to_hard_swish", rewrite.silu_to_hard_swish}}},
                {"parameters", report.parameters},
                {"calibration",
                 {{"source", source}, {"samples", report.calibration_samples}, {"seed", o.seed}}},
                {"fix_points",
                 {{"activations", histogram(report.activation_fix_points)},
                  {"weights", histogram(report.weight_fix_points)}}},
                {"shift_adjustments", report.shift_adjustments},
                {"inputs", inputs},
                {"outputs", outputs}});
    return 0;
  }
  std::cerr << "imported " << o.model << " (opset " << imported.opset
            << "): " << imported.onnx_nodes << " ONNX nodes, " << mapped
            << " mapped (the rest folded)\n";
  std::cerr << "  ops:";
  for (const auto& [type, n] : imported.mapped_ops) std::cerr << " " << type << "x" << n;
  std::cerr << "\n  " << quantized.size() << " IR ops, " << report.fix_ops << " fix ops, "
            << human_count(report.parameters) << " parameters\n";
  if (o.keep_sigmoid)
    std::cerr << "  --keep-sigmoid: sigmoid and SiLU kept (they run on the CPU)\n";
  else if (rewrite.sigmoid_to_hard_sigmoid + rewrite.silu_to_hard_swish > 0)
    std::cerr << "  as Vitis AI's quantizers for the DPU: " << rewrite.sigmoid_to_hard_sigmoid
              << " sigmoid -> hard-sigmoid, " << rewrite.silu_to_hard_swish
              << " SiLU -> hard-swish (--keep-sigmoid keeps them)\n";
  std::cerr << "  calibration: " << report.calibration_samples << " " << source << " samples\n";
  std::cerr << "  fix points: activations " << range_text(report.activation_fix_points)
            << ", weights " << range_text(report.weight_fix_points) << ", "
            << report.shift_adjustments << " moved for the shift limits\n";
  for (const auto& in : inputs)
    std::cerr << "  input " << in["name"].get<std::string>() << " " << in["shape"].dump()
              << " fix_point " << in["fix_point"] << "\n";
  for (const auto& out : outputs)
    std::cerr << "  output " << out["name"].get<std::string>() << " " << out["shape"].dump()
              << " fix_point " << out["fix_point"] << "\n";
  std::cerr << "wrote " << o.output << "\n";
  return 0;
}
#else
// A build without ONNX (DPUSHARD_WITH_ONNX=OFF, e.g. the aarch64 cross build) keeps the
// subcommand so that its options and this error stay the same everywhere.
int run_import(const ImportOptions&) {
  throw Error(
      "import: this dpushard was built without ONNX import (DPUSHARD_WITH_ONNX=OFF); run "
      "`dpushard import` on a host built with libonnx-dev and copy the xmodel");
}
#endif

}  // namespace

Command add_import_command(CLI::App& app) {
  auto options = std::make_shared<ImportOptions>();
  ImportOptions& o = *options;
  CLI::App* sub =
      app.add_subcommand("import", "Import an ONNX model and quantize it to an int8 _int xmodel");
  sub->add_option("model", o.model, "The .onnx file (as torch.onnx.export writes it)")
      ->required()
      ->check(CLI::ExistingFile);
  auto* calib =
      sub->add_option("--calib", o.calib_dir, "Folder of .npy calibration inputs (NCHW or NHWC)");
  auto* random = sub->add_option("--calib-random", o.calib_random,
                                 "Calibrate on N random standard-normal inputs")
                     ->check(CLI::Range(1, 100000));
  calib->excludes(random);
  sub->add_option("--seed", o.seed, "Seed of the random calibration inputs")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-o,--output", o.output, "The xmodel to write")->required();
  sub->add_flag("--json", o.json, "Print the summary as one JSON object on stdout");
  auto* keep = sub->add_flag(
      "--keep-sigmoid", o.keep_sigmoid,
      "Keep sigmoid and SiLU/swish as they are (they run on the CPU, vai_q_pytorch's default); "
      "by default they become hard-sigmoid and hard-swish and run on the DPU, as "
      "vai_q_tensorflow2 does by default for a DPUCZDX8G");
  sub->add_flag("--hard-sigmoid", o.hard_sigmoid,
                "The default, said explicitly: sigmoid -> hard-sigmoid, SiLU -> hard-swish")
      ->excludes(keep);
  return {sub, [options] { return run_import(*options); }};
}

}  // namespace dpushard::cli

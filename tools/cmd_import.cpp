// dpushard import MODEL.onnx: ONNX -> float IR graph -> calibrated power-of-two
// quantization -> `_int` xmodel (docs/import.md).

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/base/error.hpp"
#ifdef DPUSHARD_HAVE_ONNX_IMPORT
#include "dpushard/onnx/onnx_import.hpp"
#endif
#include "dpushard/graph/preprocessing.hpp"
#include "dpushard/quant/quantize.hpp"
#include "dpushard/xmodel/xmodel.hpp"

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
  // The preprocessing block for image inputs (preprocessing.hpp); unset: the defaults.
  std::vector<double> mean;
  std::vector<double> std_dev;
  int resize = 0;
  std::string crop;  // "N" or "HxW"
};

#ifdef DPUSHARD_HAVE_ONNX_IMPORT
// "224" or "224x200" (height x width).
std::pair<int, int> parse_crop(const std::string& text) {
  const auto x = text.find('x');
  try {
    std::size_t used = 0;
    const int h = std::stoi(text.substr(0, x), &used);
    if (used != text.substr(0, x).size()) throw std::invalid_argument(text);
    int w = h;
    if (x != std::string::npos) {
      w = std::stoi(text.substr(x + 1), &used);
      if (used != text.substr(x + 1).size()) throw std::invalid_argument(text);
    }
    if (h > 0 && w > 0) return {h, w};
  } catch (const std::exception&) {
  }
  throw Error("import: --crop '" + text + "': expected N or HxW, positive");
}

// The block recorded with the model: the defaults for its first input's shape, with the
// flags given in their place; nothing when the model does not take an image.
std::optional<Preprocessing> preprocessing_for(const ImportOptions& o, const Graph& graph) {
  const bool flags = !o.mean.empty() || !o.std_dev.empty() || o.resize > 0 || !o.crop.empty();
  const std::vector<const Op*> inputs = graph.inputs();
  const bool image = inputs.size() == 1 && inputs[0]->output.shape.size() == 4 &&
                     inputs[0]->output.shape[0] == 1 && inputs[0]->output.shape[3] == 3;
  if (!image) {
    if (flags)
      throw Error(
          "import: --mean/--std/--resize/--crop are for a model with one image input "
          "(NHWC [1, H, W, 3]); this one has " +
          std::to_string(inputs.size()) + " input(s) of other shapes");
    return std::nullopt;
  }
  const auto& shape = inputs[0]->output.shape;
  Preprocessing p = default_preprocessing(shape, inputs[0]->name);
  if (!o.mean.empty()) std::copy(o.mean.begin(), o.mean.end(), p.mean.begin());
  if (!o.std_dev.empty()) std::copy(o.std_dev.begin(), o.std_dev.end(), p.std.begin());
  if (o.resize > 0) p.resize = o.resize;
  if (!o.crop.empty()) std::tie(p.crop_height, p.crop_width) = parse_crop(o.crop);
  try {
    check_preprocessing(p, shape, inputs[0]->name);
  } catch (const Error& e) {
    throw Error(std::string("import: ") + e.what());
  }
  return p;
}

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
  Graph quantized = quantize(imported.graph, calibration, &report);
  const std::optional<Preprocessing> preprocessing = preprocessing_for(o, quantized);
  if (preprocessing) record_preprocessing(quantized, *preprocessing);
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
                {"outputs", outputs},
                {"preprocessing",
                 preprocessing ? preprocessing_json(*preprocessing) : nlohmann::json(nullptr)}});
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
  if (preprocessing)
    std::cerr << "  preprocessing for images: " << preprocessing_text(*preprocessing)
              << " (--mean/--std/--resize/--crop; defaults: ImageNet's mean and std, the "
                 "input's size as crop, resize crop*256/224)\n";
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
  sub->add_option("--mean", o.mean,
                  "Images: per-channel mean (R,G,B) after /255, recorded with the model "
                  "[default: 0.485,0.456,0.406]")
      ->delimiter(',')
      ->expected(3);
  sub->add_option("--std", o.std_dev,
                  "Images: per-channel std (R,G,B) [default: 0.229,0.224,0.225]")
      ->delimiter(',')
      ->expected(3);
  sub->add_option("--resize", o.resize,
                  "Images: the shorter side after the bilinear resize [default: crop*256/224, "
                  "256 for 224]")
      ->check(CLI::Range(1, 65536));
  sub->add_option("--crop", o.crop,
                  "Images: the centre crop, N or HxW; must be the input's size [default: the "
                  "input's H x W]");
  return {sub, [options] { return run_import(*options); }};
}

}  // namespace dpushard::cli

// Accuracy of `dpushard import`: models trained in PyTorch on scikit-learn's digits
// (a small CNN, a conv-stem vision transformer) and torchvision's resnet18 with random
// weights, each exported to ONNX, imported and quantized by the CLI, then run on the
// int8 `ref` backend against PyTorch's float results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "dpushard/onnx/onnx_import.hpp"
#include "dpushard/quant/quantize.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "harness.hpp"

namespace dpushard::onnxtest {
namespace {

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

// Imports `model` with the CLI (calibration `calib_args`), checks its JSON summary and
// returns the written `_int` graph.
Graph cli_import(const std::filesystem::path& model, const std::string& calib_args,
                 const std::filesystem::path& xmodel) {
  std::string out;
  const int rc = run_cli(
      "import '" + model.string() + "' " + calib_args + " -o '" + xmodel.string() + "' --json",
      out);
  EXPECT_EQ(rc, 0) << out;
  const auto summary = nlohmann::json::parse(out);
  EXPECT_EQ(summary.at("output"), xmodel.string());
  EXPECT_GT(summary.at("fix_ops").get<int>(), 0);
  EXPECT_GT(summary.at("parameters").get<long long>(), 0);
  EXPECT_EQ(summary.at("outputs").size(), 1u);
  return read_xmodel(xmodel);
}

struct DigitsResult {
  double torch_top1 = 0, float_top1 = 0, int8_top1 = 0, agreement = 0, float_error = 0;
};

// Float (our interpreter on the imported graph) and int8 (ref backend) top-1 on the
// held-out digits, and the int8/float argmax agreement.
DigitsResult evaluate_digits(const std::filesystem::path& dir, const std::string& model_file) {
  DigitsResult r;
  const Graph q = cli_import(dir / model_file, "--calib '" + (dir / "calib").string() + "'",
                             dir / (model_file + ".xmodel"));
  const OnnxImport imported = import_onnx(dir / model_file);
  const auto& in_shape = imported.graph.inputs().at(0)->output.shape;
  const FloatTensor xs = read_float_npy(dir / "test_x.npy");
  const FloatTensor ys = read_float_npy(dir / "test_y.npy");
  const FloatTensor logits = read_float_npy(dir / "test_logits.npy");
  std::vector<FloatTensor> images;
  for (const auto& row : rows(xs)) images.push_back(to_input_layout(row, in_shape, "test_x"));
  const auto torch_rows = rows(logits);
  FloatInterpreter interp(imported.graph);
  const auto int8 = run_int8(q, images);
  const auto n = static_cast<double>(images.size());
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto label = static_cast<std::size_t>(ys.data[i]);
    const auto f = interp.run({images[i]}).at(0).data;
    r.float_error = std::max(r.float_error, relative_error(f, torch_rows[i].data));
    r.torch_top1 += argmax(torch_rows[i].data) == label ? 100.0 / n : 0.0;
    r.float_top1 += argmax(f) == label ? 100.0 / n : 0.0;
    r.int8_top1 += argmax(int8[i]) == label ? 100.0 / n : 0.0;
    r.agreement += argmax(int8[i]) == argmax(f) ? 100.0 / n : 0.0;
  }
  return r;
}

TEST(OnnxAccuracy, DigitsCnnInt8WithinOnePointOfFloat) {
  const auto dir = work_dir("digits_cnn");
  ASSERT_TRUE(make_models("digits " + dir.string()))
      << "see " << DPUSHARD_ONNX_WORK << "/python_*.err";
  const auto info = read_json(dir / "info.json");
  const DigitsResult r = evaluate_digits(dir, "model.onnx");
  std::cout << "digits CNN (" << info["test_count"] << " held-out images): PyTorch float top-1 "
            << r.torch_top1 << "%, dpushard float " << r.float_top1 << "%, int8 (ref) "
            << r.int8_top1 << "%, int8/float argmax agreement " << r.agreement << "%\n";
  EXPECT_NEAR(r.torch_top1, info["float_top1"].get<double>(), 1e-6);
  EXPECT_LT(r.float_error, 1e-4) << "imported float graph differs from PyTorch";
  EXPECT_NEAR(r.float_top1, r.torch_top1, 1e-6);
  EXPECT_GE(r.int8_top1, r.torch_top1 - 1.0) << "int8 accuracy more than 1 point below float";
}

TEST(OnnxAccuracy, ConvVitImportsAndAgreesWithFloat) {
  const auto dir = work_dir("conv_vit");
  ASSERT_TRUE(make_models("vit " + dir.string()))
      << "see " << DPUSHARD_ONNX_WORK << "/python_*.err";
  for (const std::string model : {"model.onnx", "model_unbind17.onnx"}) {
    SCOPED_TRACE(model);
    const DigitsResult r = evaluate_digits(dir, model);
    std::cout << "conv-stem ViT " << model << ": PyTorch float top-1 " << r.torch_top1
              << "%, int8 (ref) " << r.int8_top1 << "%, int8/float argmax agreement " << r.agreement
              << "%\n";
    EXPECT_LT(r.float_error, 1e-4) << "imported float graph differs from PyTorch";
    EXPECT_GE(r.agreement, 90.0);
    EXPECT_GE(r.int8_top1, r.torch_top1 - 5.0);
  }
}

// A torchvision model with random weights: the float import matches PyTorch and the int8
// model runs on ref with outputs close to float.
void check_torchvision(const std::string& name, int size, double min_cosine) {
  const auto dir = work_dir("tv_" + name);
  ASSERT_TRUE(
      make_models("torchvision " + name + " " + dir.string() + " --size " + std::to_string(size)))
      << "see " << DPUSHARD_ONNX_WORK << "/python_*.err";
  const Graph q = cli_import(dir / "model.onnx", "--calib-random 2 --seed 3", dir / "model.xmodel");
  const OnnxImport imported = import_onnx(dir / "model.onnx");
  const FloatTensor x = to_input_layout(read_float_npy(dir / "input.npy"),
                                        imported.graph.inputs().at(0)->output.shape, "input");
  const FloatTensor want = read_float_npy(dir / "output.npy");
  FloatInterpreter interp(imported.graph);
  const auto f = interp.run({x}).at(0).data;
  const double err = relative_error(f, want.data);
  const auto int8 = run_int8(q, {x}).at(0);
  const double cos = cosine(int8, f);
  std::cout << name << " " << size << "x" << size << ": float rel err " << err
            << ", int8 cosine to float " << cos << ", argmax int8 " << argmax(int8) << " float "
            << argmax(f) << "\n";
  EXPECT_LT(err, 1e-3);
  EXPECT_GT(cos, min_cosine);
}

TEST(OnnxAccuracy, Resnet18RandomWeightsImportsAndRuns) { check_torchvision("resnet18", 64, 0.9); }

#if DPUSHARD_SLOW_TESTS
// Opt-in (cmake -DDPUSHARD_SLOW_TESTS=ON): the other torchvision models at their native sizes.
TEST(OnnxSlow, TorchvisionModelsImportAndRun) {
  for (const auto& [name, size] :
       std::vector<std::pair<std::string, int>>{{"resnet50", 224},
                                                {"vgg16", 224},
                                                {"mobilenet_v2", 224},
                                                {"squeezenet1_1", 224},
                                                {"inception_v3", 299},
                                                {"efficientnet_b0", 224}}) {
    SCOPED_TRACE(name);
    check_torchvision(name, size, 0.5);
  }
}
#endif

}  // namespace
}  // namespace dpushard::onnxtest

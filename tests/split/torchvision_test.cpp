// The invariant on an imported model: torchvision's resnet18 with random weights, exported
// to ONNX by tests/onnx/make_models.py (Debian's /usr/bin/python3 with python3-torch and
// python3-torchvision, which scripts/install-deps.sh installs), imported and quantized with
// random calibration. For 1 to 4 nodes and every strategy, the plan's fragments run in
// plan order give outputs bit-identical to the whole model on the ref backend. Without
// Python and torch the test fails (it never skips): CI must have them.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/onnx/onnx_import.hpp"
#include "dpushard/quant/quantize.hpp"
#include "split/split_helpers.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::ScratchDir;

constexpr int kSize = 32;  // input side: resnet18's graph at a test-friendly cost

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Exports resnet18 (random weights, seed 0) to `dir`/model.onnx; false when Python fails.
bool export_resnet18(const std::filesystem::path& dir, const std::filesystem::path& err) {
  const std::string command =
      "/usr/bin/python3 " +
      quoted(std::string(DPUSHARD_SOURCE_DIR) + "/tests/onnx/make_models.py") +
      " torchvision resnet18 " + quoted(dir.string()) + " --size " + std::to_string(kSize) +
      " >/dev/null 2>" + quoted(err.string());
  return std::system(command.c_str()) == 0;
}

std::string last_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;  // Python's last line: the exception
}

// resnet18 as an `_int` graph: exported, imported, quantized with 2 random calibration
// samples (seed 3), as `dpushard import --calib-random 2 --seed 3` does.
Graph imported_resnet18(const std::filesystem::path& dir) {
  const auto err = dir / "python.err";
  if (!export_resnet18(dir / "onnx", err))
    throw Error(
        "exporting torchvision resnet18 failed: this test needs /usr/bin/python3 with "
        "python3-torch, python3-torchvision and python3-onnx (scripts/install-deps.sh); "
        "Python's error: " +
        last_line(err));
  const OnnxImport imported = import_onnx(dir / "onnx" / "model.onnx");
  return quantize(imported.graph, random_calibration(imported.graph, 2, 3));
}

// One test, so the export and import (most of its time) happen once.
TEST(TorchvisionResnet18, FragmentsInPlanOrderEqualTheWholeModel) {
  ScratchDir dir;
  const Graph model = imported_resnet18(dir.path());
  const auto whole = testing::run_whole(model, 5);
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_EQ(whole[0].shape, (std::vector<std::int64_t>{1, 1000}));

  int k = 0;
  for (int nodes = 1; nodes <= 4; ++nodes) {
    for (const auto& v : testing::split_variants()) {
      if (nodes == 1 && &v != &testing::split_variants().front())
        continue;  // one node: one fragment
      const SplitOptions o = testing::split_options(v, nodes);
      const std::string what = testing::describe("resnet18", v, nodes);
      Plan plan;
      const auto got =
          testing::run_split(model, o, dir.path() / ("plan" + std::to_string(k++)), 5, &plan);
      ASSERT_EQ(got.size(), whole.size()) << what;
      EXPECT_EQ(got[0].name, whole[0].name) << what;
      EXPECT_EQ(got[0].shape, whole[0].shape) << what;
      EXPECT_EQ(got[0].fix_point, whole[0].fix_point) << what;
      EXPECT_EQ(sha256_hex(got[0].data), sha256_hex(whole[0].data)) << what;
      if (nodes == 1) {
        EXPECT_EQ(plan.fragments.size(), 1u) << what;
        continue;
      }
      if (v.strategy == "pipeline") {
        EXPECT_EQ(plan.strategy, "pipeline") << what;
        EXPECT_GE(plan.fragments.size(), 2u) << what;
      }
      if (v.strategy != "experts") continue;
      // resnet18's only fork-joins are its residual blocks: the shortcut (identity or a 1x1
      // downsample) overlaps too little of the model to be worth a node, so experts falls
      // back to pipeline and says why.
      EXPECT_EQ(plan.strategy, "pipeline") << what;
      bool said = false;
      for (const auto& a : plan.adjustments)
        said = said || (a.kind == "fallback" && a.at == "experts" &&
                        a.reason.find("fork-join") != std::string::npos);
      EXPECT_TRUE(said) << what << ": the fallback must be recorded with its reason";
    }
  }

  // The residual fork-joins are found all the same: with no minimum overlap, experts splits
  // the most parallel one (layer4.0: the 1x1 downsample shortcut and the residual convs on
  // different nodes), bit-identical.
  SplitOptions o;
  o.nodes = 2;
  o.strategy = "experts";
  o.min_parallel_fraction = 0.0;
  Plan plan;
  const auto got = testing::run_split(model, o, dir.path() / "residual", 5, &plan);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(sha256_hex(got[0].data), sha256_hex(whole[0].data))
      << "experts on the residual fork-join";
  EXPECT_EQ(plan.strategy, "experts");
  std::size_t branches = 0;
  for (const auto& f : plan.fragments) branches += f.branches.size();
  EXPECT_EQ(branches, 2u) << "a residual block has two branches: the shortcut and the convs";

  // Experts whose branches are pipelined, on the same residual fork-join: 3 nodes for its
  // 2 branches, so the residual convs run as 2 stages beside the shortcut; bit-identical.
  o.nodes = 3;
  o.strategy = "hybrid";
  o.replicas = 1;
  Plan staged;
  const auto piped = testing::run_split(model, o, dir.path() / "pipelined", 5, &staged);
  ASSERT_EQ(piped.size(), 1u);
  EXPECT_EQ(sha256_hex(piped[0].data), sha256_hex(whole[0].data)) << "pipelined experts";
  EXPECT_EQ(staged.inner_strategy, "pipelined-experts") << staged.structure;
  EXPECT_THAT(staged.structure, ::testing::HasSubstr("in 2 stages"));

  // A hybrid: two replicas of a 2-node plan (a pipeline: experts is not worth it here).
  SplitOptions h;
  h.nodes = 4;
  h.strategy = "hybrid";
  Plan hybrid;
  const auto twice = testing::run_split(model, h, dir.path() / "hybrid", 5, &hybrid);
  ASSERT_EQ(twice.size(), 1u);
  EXPECT_EQ(sha256_hex(twice[0].data), sha256_hex(whole[0].data)) << "hybrid 2 x 2";
  EXPECT_EQ(hybrid.strategy, "hybrid");
  EXPECT_EQ(hybrid.inner_strategy, "pipeline");
  EXPECT_EQ(hybrid.replicas, 2);
}

}  // namespace
}  // namespace dpushard

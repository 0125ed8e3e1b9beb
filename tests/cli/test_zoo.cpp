// `dpushard zoo cnn|convvit` run as a user would: the built binary writes a model that
// reads back with the reported parameter count; bad arguments get one error line.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "dpushard/graph/cost.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "support/cli_runner.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using testing::ScratchDir;

using Result = testing::CliResult;
using testing::quoted;
using testing::run_cli;

TEST(CliZoo, CnnWritesAModelThatReadsBackWithTheReportedParams) {
  ScratchDir dir;
  const auto file = dir / "cnn_int.xmodel";
  const Result r = run_cli(dir, "zoo cnn --params 2M --experts 2 -o " + quoted(file.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // human output goes to stderr
  EXPECT_NE(r.err.find("cnn"), std::string::npos) << r.err;

  const Graph g = read_xmodel(file);
  EXPECT_NO_THROW(validate(g));
  const std::int64_t params = graph_cost(g).params;
  EXPECT_NEAR(static_cast<double>(params), 2e6, 0.05 * 2e6);

  // The file holds exactly the graph the library makes from the same spec.
  ZooSpec spec;
  spec.params = 2'000'000;
  spec.experts = 2;
  EXPECT_TRUE(g == make_cnn(spec));
}

TEST(CliZoo, ConvVitJsonReportsTheFileAndItsCost) {
  ScratchDir dir;
  const auto file = dir / "vit_int.xmodel";
  const Result r = run_cli(dir,
                           "zoo convvit --params 1.5M --experts 3 --input 64x96x3 --seed 9 "
                           "--join sum --classes 10 --json -o " +
                               quoted(file.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["file"], file.string());
  EXPECT_EQ(j["family"], "convvit");
  EXPECT_EQ(j["target_params"], 1'500'000);
  EXPECT_EQ(j["experts"], 3);
  EXPECT_EQ(j["input"], "64x96x3");
  EXPECT_EQ(j["seed"], 9);
  EXPECT_EQ(j["join"], "sum");

  const Graph g = read_xmodel(file);
  const GraphCost cost = graph_cost(g);
  EXPECT_EQ(j["params"], cost.params);
  EXPECT_EQ(j["macs"], cost.macs);
  EXPECT_EQ(g.inputs().front()->output.shape, (std::vector<std::int64_t>{1, 64, 96, 3}));
  EXPECT_EQ(g.outputs().front()->output.shape, (std::vector<std::int64_t>{1, 10}));
}

TEST(CliZoo, BadArgumentsFailWithOneLineAndNoFile) {
  ScratchDir dir;
  const auto file = dir / "bad_int.xmodel";
  const std::string out = " -o " + quoted(file.string());
  for (const std::string& args :
       {"zoo cnn --params 12X" + out, "zoo cnn --params -3M" + out,
        "zoo convvit --params 1M --input 224x224" + out, "zoo cnn --params 1K" + out,
        "zoo cnn --params 1M --input 8x8x3" + out, "zoo convvit --params 1M --join max" + out,
        "zoo cnn --params 1M --experts 0" + out, std::string("zoo cnn --params 1M"),
        std::string("zoo bogus --params 1M") + out}) {
    const Result r = run_cli(dir, args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_FALSE(r.err.empty()) << args;
    EXPECT_FALSE(std::filesystem::exists(file)) << args;
  }
  const Result r = run_cli(dir, "zoo cnn --params 12X" + out);
  EXPECT_EQ(r.err,
            "dpushard: error: --params: count '12X': expected a positive number with an "
            "optional K, M or G suffix (e.g. 100M, 2.5M, 750K)\n");
}

TEST(CliZoo, UnwritableOutputNamesTheFile) {
  ScratchDir dir;
  const std::string file = (dir / "missing" / "m_int.xmodel").string();
  const Result r = run_cli(dir, "zoo cnn --params 1M -o " + quoted(file));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dpushard

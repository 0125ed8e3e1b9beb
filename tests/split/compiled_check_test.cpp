// Compiled fragments against their plan (dpushard/split/compiled_check.hpp), on the real ResNet-20
// `_int`/compiled pair (../shared/fixtures/xmodel, SOURCES.md there: vai_c_xir 3.5 for a
// Versal DPUCVDX8G) and on compiled files DERIVED from the real one by editing it with
// dpushard's own xmodel writer: a changed shape, a changed fix point, a DPU op moved into the
// CPU subgraph, a new CPU subgraph, another DPU's fingerprint.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "dpushard/base/sha256.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/compiled_check.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "support/cli_runner.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::fixture;
using ::testing::HasSubstr;
using testing::kResNetInt;
using testing::kResNetVck190;

class CompiledCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    DPUSHARD_REQUIRE_FIXTURES();
    dir_ = std::filesystem::temp_directory_path() /
           ("dpushard-compiled-check-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    SplitOptions options;
    options.nodes = 1;
    SplitResult split = split_model(read_xmodel(fixture(kResNetInt)), options);
    plan_ = write_split(split, dir_);
    ASSERT_EQ(plan_.fragments.size(), 1u);
    real_ = read_xmodel(fixture(kResNetVck190));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Records `compiled` (written with dpushard's writer unless `bytes` are given) as the
  // fragment's compiled file, for `fingerprint` (0: the file's own).
  void record(const Graph& compiled, std::uint64_t fingerprint = 0) {
    const std::string file = "fragments/whole.xmodel";
    write_xmodel(compiled, dir_ / file);
    if (fingerprint == 0) fingerprint = compiled_fingerprint(compiled, "test");
    plan_.fragments[0].compiled = PlanCompiled{file, sha256_file(dir_ / file), fingerprint};
  }
  void record_real() {
    const std::string file = "fragments/whole.xmodel";
    std::filesystem::copy_file(fixture(kResNetVck190), dir_ / file,
                               std::filesystem::copy_options::overwrite_existing);
    plan_.fragments[0].compiled =
        PlanCompiled{file, sha256_file(dir_ / file), compiled_fingerprint(real_, "test")};
  }
  std::string error_of(const CompiledCheckOptions& options = {}) {
    try {
      check_compiled_plan(plan_, dir_, options);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  // The real file with `edit` applied.
  Graph derived(const std::function<void(Graph&)>& edit) {
    Graph g = real_;
    edit(g);
    return g;
  }
  Subgraph& child(Graph& g, const std::string& device) {
    for (Subgraph& c : g.root()->children)
      if (c.device() == device) return c;
    throw Error("no " + device + " subgraph");
  }
  // The compiled op whose output tensor is `tensor` (the compiler keeps the `_int` fix op's
  // name for the tensor; the op's own name may differ).
  Op& op_of_tensor(Graph& g, const std::string& tensor) {
    for (const Op& op : g.ops())
      if (op.output.name == tensor) return const_cast<Op&>(op);
    throw Error("no op makes tensor " + tensor);
  }

  // The last conv2d-fix of the real file: the fc, which vai_c_xir turned into a conv.
  std::string last_conv() const {
    std::string name;
    for (const Op& op : real_.ops())
      if (op.type == "conv2d-fix") name = op.name;
    return name;
  }

  std::filesystem::path dir_;
  Plan plan_;
  Graph real_;
};

TEST_F(CompiledCheck, TheRealPairMatchesItsPlan) {
  record_real();
  EXPECT_EQ(error_of(), "");
  EXPECT_TRUE(check_compiled_plan(plan_, dir_).empty());
  // Through dpushard's writer too (what every derived file below goes through).
  record(real_);
  EXPECT_EQ(error_of(), "");
}

TEST_F(CompiledCheck, AnotherDpuIsRefused) {
  record_real();
  const std::uint64_t real = plan_.fragments[0].compiled->dpu_fingerprint;
  CompiledCheckOptions kv260;
  kv260.target_fingerprint = 0x101000016010407;
  EXPECT_EQ(error_of(kv260),
            "fragment 'whole': compiled file fragments/whole.xmodel: compiled for DPU " +
                fingerprint_text(real) + ", the target's DPU is 0x101000016010407");
  plan_.fragments[0].compiled->dpu_fingerprint = 0x101000016010407;
  EXPECT_THAT(error_of(), HasSubstr(", the plan records 0x101000016010407"));
}

TEST_F(CompiledCheck, AChangedShapeIsNamed) {
  const std::string input = plan_.fragments[0].inputs[0].name;
  record(derived([&](Graph& g) {
    Op& data = const_cast<Op&>(*g.inputs()[0]);
    data.output.shape = {1, 32, 32, 4};
  }));
  EXPECT_EQ(error_of(),
            "fragment 'whole': compiled file fragments/whole.xmodel: input '" + input +
                "' has shape [1,32,32,4] in the compiled file, [1,32,32,3] in the plan");
}

TEST_F(CompiledCheck, AChangedFixPointIsNamed) {
  const PlanTensor output = plan_.fragments[0].outputs[0];
  record(derived([&](Graph& g) {
    op_of_tensor(g, output.name).output.attrs["fix_point"] = std::int32_t{output.fix_point + 1};
  }));
  EXPECT_THAT(error_of(),
              HasSubstr("output '" + output.name + "' has fix_point " +
                        std::to_string(output.fix_point + 1) + " in the compiled file, " +
                        std::to_string(output.fix_point) + " in the plan"));
}

TEST_F(CompiledCheck, AnOpMovedToTheCpuIsAnErrorOrAWarning) {
  const std::string moved = last_conv();  // the fc (a matmul compiled to a conv2d-fix)
  ASSERT_THAT(moved, HasSubstr("Linear_fc"));
  record(derived([&](Graph& g) {
    std::function<void(Subgraph&)> remove = [&](Subgraph& s) {
      std::erase(s.ops, moved);
      for (Subgraph& c : s.children) remove(c);
    };
    remove(child(g, "DPU"));
    child(g, "CPU").ops.push_back(moved);
  }));
  const std::string line = "fragment 'whole': compiled file fragments/whole.xmodel: op '" + moved +
                           "' (" + std::string("conv2d-fix") + ") runs in CPU subgraph '" +
                           child(real_, "CPU").name + "', the oracle predicted the DPU";
  EXPECT_EQ(error_of(), line + " (--allow-cpu-subgraphs makes this a warning)");
  CompiledCheckOptions allow;
  allow.allow_cpu_subgraphs = true;
  EXPECT_EQ(check_compiled_plan(plan_, dir_, allow), std::vector<std::string>{line});
}

TEST_F(CompiledCheck, ASurpriseCpuSubgraphNamesItsOp) {
  // The global average pool in a CPU subgraph of its own between DPU and fc, as vai_c_xir
  // makes of a pool the DPU cannot run.
  std::string pool;
  for (const Op& op : real_.ops())
    if (op.type == "pool-fix") pool = op.name;
  ASSERT_FALSE(pool.empty());
  record(derived([&](Graph& g) {
    std::function<void(Subgraph&)> remove = [&](Subgraph& s) {
      std::erase(s.ops, pool);
      for (Subgraph& c : s.children) remove(c);
    };
    remove(child(g, "DPU"));
    Subgraph cpu;
    cpu.name = "subgraph_" + pool;
    cpu.ops = {pool};
    cpu.attrs["device"] = std::string("CPU");
    g.root()->children.push_back(cpu);
  }));
  EXPECT_THAT(error_of(), HasSubstr("op '" + pool + "' (pool-fix) runs in CPU subgraph 'subgraph_" +
                                    pool + "', the oracle predicted the DPU"));
}

TEST_F(CompiledCheck, AFileThatIsNotTheRecordedOneIsRefused) {
  record_real();
  plan_.fragments[0].compiled->sha256 = std::string(64, '0');
  const std::filesystem::path file = dir_ / "fragments/whole.xmodel";
  EXPECT_EQ(error_of(), "fragment 'whole': compiled file: " + file.string() + " has sha256 " +
                            sha256_file(file) + ", the plan records " + std::string(64, '0'));
  plan_.fragments[0].compiled->file = "fragments/missing.xmodel";
  EXPECT_EQ(error_of(), "fragment 'whole': compiled file: " +
                            (dir_ / "fragments/missing.xmodel").string() + " is missing");
}

// `dpushard plan add-compiled` records the real compiled file (only after checking it), and
// `plan check-compiled` checks it again, against a target DPU too; bad input is one line.
TEST_F(CompiledCheck, TheCommandLineRecordsAndChecks) {
  const testing::ScratchDir scratch;
  const std::string plan = testing::quoted(dir_.string());
  const std::string file = (dir_ / "fragments" / "whole.xmodel").string();
  std::filesystem::copy_file(fixture(kResNetVck190), file);
  auto r = testing::run_cli(scratch, "plan check-compiled " + plan);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("dpushard: error: plan " + dir_.string() +
                               ": no fragment records a compiled file"));
  r = testing::run_cli(scratch, "plan add-compiled " + plan + " whole " + testing::quoted(file));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Plan recorded = read_plan(dir_);
  ASSERT_TRUE(recorded.fragments[0].compiled);
  EXPECT_EQ(recorded.fragments[0].compiled->file, "fragments/whole.xmodel");
  EXPECT_EQ(recorded.fragments[0].compiled->sha256, sha256_file(fixture(kResNetVck190)));
  EXPECT_EQ(recorded.fragments[0].compiled->dpu_fingerprint, compiled_fingerprint(real_, "x"));
  r = testing::run_cli(scratch, "plan check-compiled " + plan);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = testing::run_cli(scratch,
                       "plan check-compiled " + plan + " --dpu-fingerprint 0x101000016010407");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("dpushard: error: fragment 'whole': compiled file "
                               "fragments/whole.xmodel: compiled for DPU "));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A derived file with a changed input shape is not recorded; the plan stays as it was.
  write_xmodel(derived([](Graph& g) {
                 const_cast<Op&>(*g.inputs()[0]).output.shape = {1, 32, 32, 4};
               }),
               dir_ / "fragments" / "shape.xmodel");
  r = testing::run_cli(scratch,
                       "plan add-compiled " + plan + " whole " +
                           testing::quoted((dir_ / "fragments" / "shape.xmodel").string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("has shape [1,32,32,4] in the compiled file"));
  EXPECT_EQ(read_plan(dir_), recorded);
}

// `run --cluster` checks the recorded compiled files before contacting any node: a derived
// file with a DPU op moved to the CPU stops it with one line (the address is never used).
TEST_F(CompiledCheck, RunOnAClusterChecksFirst) {
  const testing::ScratchDir scratch;
  const std::string moved = last_conv();
  record(derived([&](Graph& g) {
    std::function<void(Subgraph&)> remove = [&](Subgraph& s) {
      std::erase(s.ops, moved);
      for (Subgraph& c : s.children) remove(c);
    };
    remove(child(g, "DPU"));
    child(g, "CPU").ops.push_back(moved);
  }));
  write_plan(plan_, dir_);
  testing::write_bytes(scratch / "cluster.yaml",
                       "nodes:\n  - {name: board0, address: 127.0.0.1:9, backend: vart}\n");
  const std::string args = "run " + testing::quoted(dir_.string()) + " --cluster " +
                           testing::quoted((scratch / "cluster.yaml").string()) + " --frames 1";
  auto r = testing::run_cli(scratch, args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "dpushard: error: fragment 'whole': compiled file fragments/whole.xmodel: op '" +
                       moved + "' (conv2d-fix) runs in CPU subgraph '" + child(real_, "CPU").name +
                       "', the oracle predicted the DPU (--allow-cpu-subgraphs makes this a "
                       "warning)\n");
  // Allowed, it is one warning, and the run goes on to the node (which is not there).
  r = testing::run_cli(scratch, args + " --allow-cpu-subgraphs");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("dpushard: warning: fragment 'whole': compiled file "));
  EXPECT_THAT(r.err, HasSubstr("board0"));
}

}  // namespace
}  // namespace dpushard

// `dpushard split`, `dpushard run --local` and `dpushard zoo micro` run as a user would:
// the built binary, its exit code, one JSON object on stdout, one error line on stderr.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_runner.hpp"
#include "support/npy_file.hpp"
#include "support/small_disk.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::ScratchDir;

using Result = testing::CliResult;
using testing::npy_file;
using testing::quoted;
using testing::run_cli;

std::vector<std::string> output_hashes(const std::string& out) {
  std::vector<std::string> hashes;
  const json j = json::parse(out);  // kept alive: the loop walks a member of it
  for (const auto& t : j.at("outputs")) hashes.push_back(t.at("sha256").get<std::string>());
  EXPECT_FALSE(hashes.empty()) << out;
  return hashes;
}

TEST(CliSplit, RunLocalPrintsTheSameOutputsAsExec) {
  ScratchDir dir;
  const std::string model = quoted((dir / "m_int.xmodel").string());
  const std::string plan = quoted((dir / "plan").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " + model)
          .exit_code,
      0);
  const Result split =
      run_cli(dir, "split " + model + " --nodes 3 --strategy experts -o " + plan + " --json");
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const json summary = json::parse(split.out);
  EXPECT_EQ(summary.at("strategy"), "experts");
  EXPECT_EQ(summary.at("fragments").size(), 5u);
  EXPECT_TRUE(std::filesystem::exists(dir / "plan" / "plan.yaml"));
  EXPECT_TRUE(std::filesystem::exists(dir / "plan" / "fragments" / "stem_int.xmodel"));

  const Result exec = run_cli(dir, "exec " + model + " --seed 5 --json");
  const Result run = run_cli(dir, "run " + plan + " --local --seed 5 --json");
  ASSERT_EQ(exec.exit_code, 0) << exec.err;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(output_hashes(run.out), output_hashes(exec.out));
  EXPECT_EQ(json::parse(run.out).at("outputs"), json::parse(exec.out).at("outputs"));

  // Human output goes to stderr.
  const Result human = run_cli(dir, "split " + model + " --nodes 2 --strategy pipeline -o " + plan);
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_TRUE(human.out.empty());
  EXPECT_THAT(human.err, HasSubstr("pipeline on 2 nodes"));
}

// Usage errors, CLI11's and our own, are one line with the dpushard prefix and exit 2
// (CLI11 alone exits 105-109 and prints a second line).
TEST(CliUsage, UsageErrorsAreOneLineExitTwo) {
  ScratchDir dir;
  // A zoo model, not a fixture of ../shared: usage errors must be checked on a bare clone too.
  const std::string model = quoted((dir / "m_int.xmodel").string());
  const std::string plan = quoted((dir / "plan").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " + model)
          .exit_code,
      0);
  ASSERT_EQ(run_cli(dir, "split " + model + " --nodes 2 --strategy pipeline -o " + plan).exit_code,
            0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run " + plan, "--local (in this process) or --cluster"},
      {"run " + plan + " --local --seed -1", "--seed"},
      {"exec " + model + " --seed -1", "--seed"},
      {"zoo cnn --params 1M --seed -1 -o " + quoted((dir / "z.xmodel").string()), "--seed"},
      {"exec " + model + " --no-such-option", "--no-such-option"},
      {"exec", "file"},
      {"split " + model + " --nodes many -o " + plan, "--nodes"},
      {"", "subcommand"},
      {"frobnicate", "subcommand"},
  };
  for (const auto& [args, problem] : cases) {
    const Result r = run_cli(dir, args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err.rfind("dpushard: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(problem)) << args;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
  const Result help = run_cli(dir, "run --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--cluster"));
}

TEST(CliSplit, BadInputIsOneErrorLine) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  // A zoo model, not a fixture of ../shared: usage errors must be checked on a bare clone too.
  const std::string resnet = quoted((dir / "m_int.xmodel").string());
  const std::string plan = quoted((dir / "plan").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " + resnet)
          .exit_code,
      0);
  ASSERT_EQ(run_cli(dir, "split " + resnet + " --nodes 2 --strategy pipeline -o " + plan).exit_code,
            0);
  std::filesystem::remove(dir / "plan" / "fragments" / "stage1_int.xmodel");
  for (const std::string& args :
       {"run " + plan + " --local", "split /nonexistent.xmodel --nodes 2 -o " + plan,
        "split " + resnet + " --nodes 2 --cuts nosuchop --strategy pipeline -o " + plan}) {
    const Result r = run_cli(dir, args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_THAT(r.err, HasSubstr("dpushard: error: ")) << args;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": " << r.err;
  }
}

// run --local --input: the same .npy gives the same outputs as exec --input on the whole
// model, int8 taken as is and float32 quantized with the input's fix point.
TEST(CliSplit, RunLocalTakesNpyInputs) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const std::string resnet = quoted(testing::fixture(testing::kResNetInt).string());
  const std::string plan = quoted((dir / "plan").string());
  ASSERT_EQ(run_cli(dir, "split " + resnet + " --nodes 3 --strategy pipeline -o " + plan).exit_code,
            0);
  std::string int8, floats;
  for (int i = 0; i < 32 * 32 * 3; ++i) {
    const auto q = static_cast<std::int8_t>((i * 37) % 255 - 127);
    int8 += static_cast<char>(q);
    const float f = static_cast<float>(q) / 32.0f + 0.001f;  // fix point 5: rounds back to q
    char raw[4];
    std::memcpy(raw, &f, 4);
    floats.append(raw, 4);
  }
  testing::write_bytes(dir / "x8.npy", npy_file("|i1", "(1, 32, 32, 3)", int8));
  testing::write_bytes(dir / "xf.npy", npy_file("<f4", "(1, 32, 32, 3)", floats));
  const std::string x8 = quoted((dir / "x8.npy").string());
  const std::string xf = quoted((dir / "xf.npy").string());
  const Result exec = run_cli(dir, "exec " + resnet + " --input " + x8 + " --json");
  const Result run8 = run_cli(dir, "run " + plan + " --local --input " + x8 + " --json");
  const Result runf = run_cli(dir, "run " + plan + " --local --input " + xf + " --json");
  const Result seeded = run_cli(dir, "run " + plan + " --local --json");
  ASSERT_EQ(exec.exit_code, 0) << exec.err;
  ASSERT_EQ(run8.exit_code, 0) << run8.err;
  ASSERT_EQ(runf.exit_code, 0) << runf.err;
  ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
  EXPECT_EQ(json::parse(run8.out).at("inputs"), json::parse(exec.out).at("inputs"));
  EXPECT_EQ(json::parse(runf.out).at("inputs"), json::parse(exec.out).at("inputs"));
  EXPECT_EQ(output_hashes(run8.out), output_hashes(exec.out));
  EXPECT_EQ(output_hashes(runf.out), output_hashes(exec.out));
  EXPECT_NE(output_hashes(seeded.out), output_hashes(exec.out));

  // Bad inputs: one line naming the file (or the plan) and what is wrong.
  testing::write_bytes(dir / "shape.npy", npy_file("|i1", "(1, 32, 32)", int8.substr(0, 1024)));
  testing::write_bytes(dir / "dtype.npy", npy_file("<i4", "(1,)", "abcd"));
  testing::write_bytes(
      dir / "nan.npy",
      npy_file("<f4", "(1, 32, 32, 3)", std::string("\x00\x00\xc0\x7f", 4) + floats.substr(4)));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--input " + quoted((dir / "shape.npy").string()), "shape (1,32,32) does not match input"},
      {"--input " + quoted((dir / "dtype.npy").string()), "dtype '<i4'"},
      {"--input " + quoted((dir / "nan.npy").string()), "not finite"},
      {"--input " + quoted((dir / "none.npy").string()), "none.npy: no such file"},
      {"--input " + x8 + " --input " + x8, "has 1 input, got 2 --input files"},
  };
  for (const auto& [args, problem] : bad) {
    const Result r = run_cli(dir, "run " + plan + " --local " + args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_THAT(r.err, HasSubstr(problem)) << args;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
  EXPECT_NE(run_cli(dir, "run " + plan + " --local --seed 2 --input " + x8).exit_code, 0);
}

// split --target kv260 prices fragments with `predict`; a --no-output-fix fragment shows
// the boundary penalty there (its trailing conv on the CPU).
TEST(CliSplit, TargetPricesFragmentsWithPredict) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const std::string resnet = quoted(testing::fixture(testing::kResNetInt).string());
  for (const bool fix : {true, false}) {
    const std::string plan = quoted((dir / (fix ? "fixed" : "naive")).string());
    const Result split = run_cli(dir, "split " + resnet +
                                          " --nodes 2 --strategy pipeline --target kv260 "
                                          "--link-gbps 2.5 --json -o " +
                                          plan + (fix ? "" : " --no-output-fix"));
    ASSERT_EQ(split.exit_code, 0) << split.err;
    const json j = json::parse(split.out);
    EXPECT_EQ(j.at("cost_model"), "timing:kv260");
    EXPECT_EQ(j.at("link_gbps"), 2.5);
    ASSERT_EQ(j.at("fragments").size(), 2u);
    for (const auto& f : j.at("fragments")) {
      const std::string file = (dir / (fix ? "fixed" : "naive") / f.at("file")).string();
      const Result predict =
          run_cli(dir, "predict " + quoted(file) + " --target kv260 --io network --json");
      ASSERT_EQ(predict.exit_code, 0) << predict.err;
      const json p = json::parse(predict.out);
      const double ms = f.at("compute_ms");
      EXPECT_NEAR(ms, p.at("worker_ms").get<double>(), 1e-9 * ms) << file;
      const bool first = f.at("name") == j.at("fragments")[0].at("name");
      if (fix || !first) {
        EXPECT_TRUE(p.at("cpu_ops").empty()) << file;
        continue;
      }
      ASSERT_EQ(p.at("cpu_ops").size(), 1u) << file;
      EXPECT_THAT(p.at("cpu_ops")[0].at("reason").get<std::string>(),
                  HasSubstr("output not produced by a fix op"));
      EXPECT_GT(p.at("cpu_ms").get<double>(), 0.0);
    }
  }
  const Result bad = run_cli(
      dir, "split " + resnet + " --nodes 2 --target nosuch -o " + quoted((dir / "x").string()));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("nosuch"));
}

// --objective throughput --max-latency-ms L (issue 16): the 20M zoo CNN on 3 KV260s at
// 1 Gbit/s. Unbounded, auto takes replicate (the most fps); under a bound tighter than one
// node's latency it must take a model-parallel plan; a bound no plan meets is one line naming
// the best latency reachable, and nothing is written.
TEST(CliSplit, LatencyBoundChoosesModelParallelOverReplicate) {
  ScratchDir dir;
  const std::string model = quoted((dir / "cnn20_int.xmodel").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 20M --experts 3 --input 224x224x3 -o " + model).exit_code, 0);
  const std::string split = "split " + model +
                            " --nodes 3 --target kv260 --link-gbps 1 --objective throughput "
                            "--json -o ";
  const Result free = run_cli(dir, split + quoted((dir / "free").string()));
  ASSERT_EQ(free.exit_code, 0) << free.err;
  const json f = json::parse(free.out);
  EXPECT_EQ(f.at("strategy"), "replicate");
  EXPECT_EQ(f.at("max_latency_ms"), 0.0);
  const double one_node = f.at("predicted").at("latency_ms");  // replicate: one node's latency
  double best_latency = one_node;
  for (const auto& c : f.at("candidates"))
    if (c.contains("latency_ms"))
      best_latency = std::min(best_latency, c.at("latency_ms").get<double>());
  ASSERT_LT(best_latency, one_node) << "no model-parallel candidate beats one node";

  const double bound = (best_latency + one_node) / 2;
  const Result bounded = run_cli(dir, split + quoted((dir / "bounded").string()) +
                                          " --max-latency-ms " + std::to_string(bound));
  ASSERT_EQ(bounded.exit_code, 0) << bounded.err;
  const json b = json::parse(bounded.out);
  const std::string chosen = b.at("strategy");
  EXPECT_TRUE(chosen == "experts" || chosen == "pipeline") << chosen;
  EXPECT_LE(b.at("predicted").at("latency_ms").get<double>(), bound);
  EXPECT_NEAR(b.at("max_latency_ms").get<double>(), bound, 1e-6);
  EXPECT_EQ(b.at("candidates"), f.at("candidates"));  // every candidate still recorded
  bool replicate_left_out = false;
  for (const auto& a : b.at("adjustments"))
    replicate_left_out |= a.at("kind") == "latency_bound" && a.at("at") == "replicate";
  EXPECT_TRUE(replicate_left_out) << b.at("adjustments");
  // The bounded plan is the most fps among the candidates under the bound.
  for (const auto& c : b.at("candidates")) {
    if (c.contains("latency_ms") && c.at("latency_ms").get<double>() <= bound) {
      EXPECT_GE(b.at("predicted").at("throughput_fps").get<double>(),
                c.at("throughput_fps").get<double>() - 1e-9);
    }
  }

  char best[32];
  std::snprintf(best, sizeof best, "%.3f ms", best_latency);
  const Result none = run_cli(dir, split + quoted((dir / "none").string()) + " --max-latency-ms " +
                                       std::to_string(best_latency / 2));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("no plan meets --max-latency-ms"));
  EXPECT_THAT(none.err, HasSubstr(best));
  EXPECT_EQ(none.err.find('\n'), none.err.size() - 1) << none.err;
  EXPECT_TRUE(none.out.empty());
  EXPECT_FALSE(std::filesystem::exists(dir / "none"));

  // A named strategy must meet the bound too.
  const Result named =
      run_cli(dir, split + quoted((dir / "named").string()) +
                       " --strategy replicate --max-latency-ms " + std::to_string(bound));
  EXPECT_EQ(named.exit_code, 1);
  EXPECT_THAT(named.err, HasSubstr("the replicate plan's predicted latency"));
}

// `split --strategy hybrid` writes a valid plan of replicas (run --local gives exec's
// outputs), auto on 4 nodes records the hybrid candidates with their predictions, and a
// replica count that does not divide the nodes is one error line.
TEST(CliSplit, HybridWritesAValidPlanAndAutoRecordsItsCandidates) {
  ScratchDir dir;
  const std::string model = quoted((dir / "m_int.xmodel").string());
  const std::string plan = quoted((dir / "hybrid").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " + model)
          .exit_code,
      0);
  const Result split =
      run_cli(dir, "split " + model + " --nodes 4 --strategy hybrid -o " + plan + " --json");
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const json h = json::parse(split.out);
  EXPECT_EQ(h.at("strategy"), "hybrid");
  EXPECT_EQ(h.at("replicas"), 2);
  const std::string inner = h.at("inner_strategy");
  EXPECT_TRUE(inner == "experts" || inner == "pipeline") << inner;
  ASSERT_GE(h.at("fragments").size(), 2u);
  for (const auto& f : h.at("fragments")) {
    ASSERT_EQ(f.at("nodes").size(), 2u) << f;
    EXPECT_EQ(f.at("nodes")[0].get<int>() + 2, f.at("nodes")[1].get<int>()) << f;
  }
  const std::string yaml = testing::read_bytes(dir / "hybrid" / "plan.yaml");
  EXPECT_THAT(yaml,
              HasSubstr("strategy: hybrid\nhybrid: {inner_strategy: " + inner + ", replicas: 2}"));
  const Result exec = run_cli(dir, "exec " + model + " --seed 3 --json");
  const Result run = run_cli(dir, "run " + plan + " --local --seed 3 --json");
  ASSERT_EQ(exec.exit_code, 0) << exec.err;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(output_hashes(run.out), output_hashes(exec.out));

  const Result autos = run_cli(dir, "split " + model + " --nodes 4 --objective throughput -o " +
                                        quoted((dir / "auto").string()) + " --json");
  ASSERT_EQ(autos.exit_code, 0) << autos.err;
  std::vector<std::string> labels;
  const json a = json::parse(autos.out);  // kept alive: the loop walks a member of it
  for (const auto& c : a.at("candidates")) {
    labels.push_back(c.at("label"));
    EXPECT_TRUE(c.contains("latency_ms") && c.contains("throughput_fps")) << c;
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"replicate", "pipeline", "experts",
                                              "hybrid pipelined-experts", "hybrid 2x experts",
                                              "hybrid 2x pipeline"}));

  const Result human =
      run_cli(dir, "split " + model + " --nodes 6 --strategy hybrid --replicas 3 -o " +
                       quoted((dir / "h3").string()));
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_THAT(human.err, HasSubstr(": hybrid 3x "));
  EXPECT_THAT(human.err, HasSubstr("3 replicas of "));
  EXPECT_THAT(human.err, HasSubstr("candidate hybrid 3x "));

  const Result bad =
      run_cli(dir, "split " + model + " --nodes 4 --strategy hybrid --replicas 3 -o " +
                       quoted((dir / "bad").string()));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("dpushard: error: split: --replicas 3 on 4 nodes"));
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad"));
}

// With 6 KV260s and a latency bound that one node cannot meet, the most fps under it is a
// hybrid: 2 x 3-expert keeps experts' latency and doubles its throughput.
TEST(CliSplit, LatencyBoundOnSixNodesChoosesAHybrid) {
  ScratchDir dir;
  const std::string model = quoted((dir / "cnn20_int.xmodel").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 20M --experts 3 --input 224x224x3 -o " + model).exit_code, 0);
  const std::string split = "split " + model +
                            " --nodes 6 --target kv260 --link-gbps 1 --objective throughput "
                            "--json -o ";
  const Result free = run_cli(dir, split + quoted((dir / "free").string()));
  ASSERT_EQ(free.exit_code, 0) << free.err;
  const json f = json::parse(free.out);
  EXPECT_EQ(f.at("strategy"), "replicate");
  const double one_node = f.at("predicted").at("latency_ms");
  double experts_latency = 0, experts_fps = 0;
  for (const auto& c : f.at("candidates"))
    if (c.at("label") == "experts") {
      experts_latency = c.at("latency_ms");
      experts_fps = c.at("throughput_fps");
    }
  ASSERT_LT(experts_latency, one_node);

  const double bound = (experts_latency + one_node) / 2;
  const Result bounded = run_cli(dir, split + quoted((dir / "bounded").string()) +
                                          " --max-latency-ms " + std::to_string(bound));
  ASSERT_EQ(bounded.exit_code, 0) << bounded.err;
  const json b = json::parse(bounded.out);
  EXPECT_EQ(b.at("strategy"), "hybrid");
  EXPECT_EQ(b.at("inner_strategy"), "experts");
  EXPECT_EQ(b.at("replicas"), 2);
  EXPECT_LE(b.at("predicted").at("latency_ms").get<double>(), bound);
  EXPECT_GT(b.at("predicted").at("throughput_fps").get<double>(), 1.8 * experts_fps);
  for (const auto& c : b.at("candidates")) {
    if (c.at("latency_ms").get<double>() <= bound) {
      EXPECT_GE(b.at("predicted").at("throughput_fps").get<double>(),
                c.at("throughput_fps").get<double>() - 1e-9)
          << c;
    }
  }
}

// `split --nodes 1000` once priced every replica count of every hybrid and tried the stem
// and tail on every pair of nodes (a million placements per experts plan): 28.8 s, 1,262
// lines on stderr and a 293 KB plan.yaml for a 100M CNN. On uniform boards the idle nodes
// are interchangeable and R replicas of k nodes lose to the most replicas of k nodes, so
// both are pruned; past a dozen hybrids only those no other beats are listed, with a line
// saying how many were priced (docs/splitting.md, "Many nodes"). Timing is left to
// scripts/plan-time.py.
TEST(CliSplit, AThousandNodesListASummaryOfTheHybridsNotEveryOne) {
  ScratchDir dir;
  const std::string model = quoted((dir / "m_int.xmodel").string());
  const std::string plan = quoted((dir / "plan").string());
  ASSERT_EQ(run_cli(dir,
                    "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 "
                    "--no-weights -o " +
                        model)
                .exit_code,
            0);
  const Result split =
      run_cli(dir, "split " + model + " --nodes 1000 --strategy experts -o " + plan);
  ASSERT_EQ(split.exit_code, 0) << split.err.substr(0, 2000);
  const auto lines = static_cast<std::size_t>(std::count(split.err.begin(), split.err.end(), '\n'));
  EXPECT_LT(lines, 40u) << split.err.substr(0, 4000);
  EXPECT_THAT(split.err, HasSubstr("  candidates: "));
  EXPECT_THAT(split.err, HasSubstr(" hybrid candidates priced ("));
  EXPECT_THAT(split.err, HasSubstr("candidate experts: "));
  EXPECT_THAT(split.err, HasSubstr("candidate replicate: "));
  EXPECT_THAT(split.err, HasSubstr("candidate hybrid "));
  // One line per node slot is the plan's own; the candidates add little to it.
  EXPECT_LT(std::filesystem::file_size(dir / "plan" / "plan.yaml"), 64u * 1024u);
  const Result again =
      run_cli(dir, "split " + model + " --nodes 1000 --strategy experts -o " + plan + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.err.substr(0, 2000);
  const json j = json::parse(again.out);
  EXPECT_EQ(j.at("strategy"), "experts");
  EXPECT_LE(j.at("candidates").size(), 3u + 12u);
}

// A full disk said "write failed" without the reason, left a fragment without plan.yaml,
// and then refused the folder ("not empty and holds no plan of dpushard's").
TEST(CliSplit, AFullDiskFailsSplitAndZooInOneLineAndLeavesNothingHalfWritten) {
  ScratchDir dir;
  const std::string model = quoted((dir / "m_int.xmodel").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " + model)
          .exit_code,
      0);
  // A folder a killed split left: fragments, no plan.yaml. The next split takes it over.
  std::filesystem::create_directories(dir / "left" / "fragments");
  std::ofstream(dir / "left" / "fragments" / "stem_int.xmodel") << "half";
  const Result over = run_cli(dir, "split " + model + " --nodes 3 --strategy experts -o " +
                                       quoted((dir / "left").string()));
  EXPECT_EQ(over.exit_code, 0) << over.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "left" / "plan.yaml"));

  testing::SmallDisk disk(dir / "disk", 64 * 1024);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  const auto plan = disk.path() / "plan";
  const Result split =
      run_cli(dir, "split " + model + " --nodes 3 --strategy experts -o " + quoted(plan.string()));
  EXPECT_EQ(split.exit_code, 1);
  EXPECT_THAT(split.err, HasSubstr(": cannot write: No space left on device\n"));
  EXPECT_EQ(split.err.rfind("dpushard: error: " + plan.string() + "/fragments/", 0), 0u)
      << split.err;
  EXPECT_EQ(std::count(split.err.begin(), split.err.end(), '\n'), 1) << split.err;
  EXPECT_FALSE(std::filesystem::exists(plan)) << "a failed split left its folder behind";

  const auto zoo = disk.path() / "z_int.xmodel";
  const Result z =
      run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " +
                       quoted(zoo.string()));
  EXPECT_EQ(z.exit_code, 1);
  EXPECT_EQ(z.err,
            "dpushard: error: " + zoo.string() + ": cannot write: No space left on device\n");
  EXPECT_TRUE(std::filesystem::is_empty(disk.path())) << "a temporary file was left";
}

TEST(CliMicro, ListsAndWritesTheSuite) {
  ScratchDir dir;
  const Result list = run_cli(dir, "zoo micro --list --json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json j = json::parse(list.out);
  ASSERT_GE(j.at("models").size(), 28u);
  for (const auto& m : j.at("models")) {
    const std::string v = m.at("expected");
    EXPECT_TRUE(v == "dpu" || v == "dpu+boundary" || v == "cpu") << m.at("name");
    EXPECT_FALSE(m.at("description").get<std::string>().empty());
  }
  const Result all = run_cli(dir, "zoo micro --all -o " + quoted((dir / "micro").string()));
  ASSERT_EQ(all.exit_code, 0) << all.err;
  for (const auto& m : j.at("models"))
    EXPECT_TRUE(
        std::filesystem::exists(dir / "micro" / (m.at("name").get<std::string>() + "_int.xmodel")));
  EXPECT_EQ(run_cli(dir, "zoo micro").exit_code, 1);
}

}  // namespace
}  // namespace dpushard

// What adding a backend takes, kept true (docs/extending.md): the test-only `null` backend
// (null_backend/) joins the registry by declaring itself in its folder, and from then on the
// registry, its traits and its own options, cluster.yaml and the link pacing know it, with no other
// file edited. The strategy table answers the same questions for strategies.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/plan/strategy_table.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/zoo/micro.hpp"
#include "strategies.hpp"

namespace dpushard {
namespace {

class Extending : public ::testing::Test {
 protected:
  // null_backend/ declared itself (dpushard_backend in its CMakeLists.txt): the generated
  // registration has it, and no line here names it.
  static void SetUpTestSuite() { register_builtin_backends(); }
};

TEST_F(Extending, ANewBackendIsKnownByItsRegistrationAlone) {
  const auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "null"), names.end());
  const BackendTraits traits = backend_traits("null");
  EXPECT_EQ(traits.compiled, CompiledModels::Lowered);
  EXPECT_FALSE(traits.computes_outputs);

  const Graph graph = make_micro_model(micro_models().front().name);
  BackendOptions options;
  options.settings["fill"] = "7";
  auto backend = make_backend("null", options);
  backend->load(graph);
  std::vector<QTensor> inputs = input_specs(graph);
  for (QTensor& t : inputs) t.data.assign(static_cast<std::size_t>(t.element_count()), 1);
  const auto outputs = backend->run(inputs);
  ASSERT_EQ(outputs.size(), graph.outputs().size());
  for (const QTensor& t : outputs) {
    EXPECT_FALSE(t.computed);
    EXPECT_TRUE(std::all_of(t.data.begin(), t.data.end(), [](std::int8_t v) { return v == 7; }));
  }
}

TEST_F(Extending, ABackendRefusesAnotherBackendsOption) {
  BackendOptions options;
  options.settings["numerics"] = "true";  // sim's, not null's
  try {
    (void)make_backend("null", options);
    FAIL() << "an option null does not list was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "backend 'null' has no option 'numerics' (its options: fill)");
  }
}

TEST_F(Extending, ClusterYamlAndLinkPacingAskTheRegistry) {
  const cluster::ClusterConfig config = cluster::parse_cluster_config(
      "link_gbps: 1\nnodes:\n  - {name: w0, address: 127.0.0.1:7000, backend: \"null\"}\n",
      "cluster.yaml", ".");
  ASSERT_EQ(config.nodes.size(), 1u);
  EXPECT_EQ(config.nodes[0].backend, "null");
  // Paced under `auto` only when every node's frames take modeled time (sim's trait).
  EXPECT_FALSE(cluster::link_is_paced(config, {"null"}));
  EXPECT_TRUE(cluster::link_is_paced(config, {"sim", "sim"}));
  EXPECT_FALSE(cluster::link_is_paced(config, {"sim", "null"}));
}

TEST_F(Extending, EveryBackendHasOneAnswerToCompiledModels) {
  // The one trait both `exec` and the cluster read: vart requires compiled files, sim
  // accepts them as they are, ref and cpu lower them.
  EXPECT_EQ(backend_traits("vart").compiled, CompiledModels::Required);
  EXPECT_EQ(backend_traits("sim").compiled, CompiledModels::Accepted);
  EXPECT_EQ(backend_traits("ref").compiled, CompiledModels::Lowered);
}

// `names` without those not in `shipped`: a strategy added to the table fails no test here.
std::vector<std::string> shipped_of(const std::vector<std::string>& names,
                                    const std::vector<std::string>& shipped) {
  std::vector<std::string> out;
  for (const std::string& n : names)
    if (std::find(shipped.begin(), shipped.end(), n) != shipped.end()) out.push_back(n);
  return out;
}

TEST_F(Extending, TheStrategyTableAnswersWhatTheCallersAsk) {
  const std::vector<std::string> requestable = {"experts", "pipeline", "replicate", "hybrid",
                                                "auto"};
  EXPECT_EQ(shipped_of(requestable_strategies(), requestable), requestable);
  EXPECT_EQ(baseline_strategy(), "replicate");
  EXPECT_TRUE(strategy_chooses("auto"));
  EXPECT_TRUE(strategy_is_composite("hybrid"));
  EXPECT_FALSE(strategy_is_composite("experts"));
  for (const StrategyInfo& s : strategy_table()) EXPECT_GE(s.min_nodes, 1) << s.name;
  EXPECT_THROW((void)parse_strategy("pipelined-experts"), Error);  // an inner plan only
  EXPECT_EQ(parse_strategy("hybrid"), "hybrid");
  EXPECT_EQ(chooser_strategy(), "auto");
  EXPECT_EQ(SplitOptions{}.strategy, "auto");
  // The planner's candidates, in the order plan.yaml lists them and auto breaks ties.
  const std::vector<std::string> candidates = {"replicate", "pipeline", "experts", "hybrid"};
  EXPECT_EQ(shipped_of(candidate_strategies(), candidates), candidates);
  EXPECT_EQ(candidate_strategies().front(), "replicate");
  EXPECT_TRUE(strategy_reads("auto", "--cuts"));  // passed on to the pipeline
  EXPECT_FALSE(strategy_reads("auto", "--replicas"));
}

// Each strategy's planner is its own strategy_<stem>.cpp, listed by the build: every strategy
// that makes candidates or serves as a hybrid's inner plan has one, and every planner a row.
TEST_F(Extending, EveryStrategyHasItsPlannerAndEveryPlannerItsRow) {
  for (const StrategyInfo& s : strategy_table()) {
    const bool planned = (s.requestable && !s.chooses) || s.inner_min_replicas > 0;
    if (planned) {
      EXPECT_NO_THROW((void)split::planner_for(s.name)) << s.name;
    } else {
      EXPECT_THROW((void)split::planner_for(s.name), Error) << s.name;
    }
  }
  for (const split::StrategyPlanner& planner : split::strategy_planners()) {
    EXPECT_NE(find_strategy(planner.name), nullptr) << planner.name;
    EXPECT_NE(planner.propose, nullptr) << planner.name;
  }
}

TEST_F(Extending, SplitRefusesAStrategyTheTableDoesNotHold) {
  SplitOptions options;
  options.nodes = 2;
  options.strategy = "pipelined-experts";  // an inner plan only
  EXPECT_THROW((void)split_model(make_micro_model(micro_models().front().name), options), Error);
}

}  // namespace
}  // namespace dpushard

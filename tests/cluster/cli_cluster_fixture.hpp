#pragma once
// The fixture of the command-line cluster tests: a 3-expert CNN, its 3-node experts plan,
// `dpushard worker` processes on 127.0.0.1 and `dpushard` runs against them, bounded in time.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "net/test_client.hpp"

namespace dpushard::testing {

using namespace std::chrono_literals;

class CliCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = net::testing::fresh_dir("cli-cluster");
    std::ofstream(dir_ / "token") << "cli-secret\n";
    ZooSpec spec;
    spec.params = 300'000;
    spec.experts = 3;
    spec.input = {32, 32, 3};
    spec.classes = 10;
    spec.seed = 11;
    model_ = make_cnn(spec);
    write_xmodel(model_, dir_ / "model_int.xmodel");
    SplitOptions options;
    options.nodes = 3;
    options.strategy = "experts";
    SplitResult split = split_model(model_, options);
    write_split(split, dir_ / "plan");
  }
  void TearDown() override {
    workers_.clear();
    std::filesystem::remove_all(dir_);
  }

  // Starts worker i (again, on `port` and with its cache, when it was started before) and
  // returns its port (from --port-file).
  std::uint16_t start_worker(int i,
                             const std::vector<std::string>& backend_args = {"--backend", "ref"},
                             std::uint16_t port = 0, std::filesystem::path cache = {},
                             const std::vector<std::string>& wrapper = {}) {
    const std::string name = "w" + std::to_string(i);
    const auto port_file = dir_ / (name + ".port");
    std::filesystem::remove(port_file);
    std::vector<std::string> argv{
        DPUSHARD_CLI,   "worker",
        "--listen",     "127.0.0.1:" + std::to_string(port),
        "--cache",      (cache.empty() ? dir_ / ("cache-" + name) : cache).string(),
        "--token-file", (dir_ / "token").string(),
        "--name",       name,
        "--port-file",  port_file.string()};
    argv.insert(argv.end(), backend_args.begin(), backend_args.end());
    argv.insert(argv.begin(), wrapper.begin(), wrapper.end());  // e.g. prlimit --as=BYTES
    if (workers_.size() <= static_cast<std::size_t>(i))
      workers_.resize(static_cast<std::size_t>(i) + 1);
    workers_[static_cast<std::size_t>(i)] =
        std::make_unique<ChildProcess>(argv, dir_ / (name + ".out"), dir_ / (name + ".log"));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (read_text(port_file).empty()) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no port file");
      std::this_thread::sleep_for(5ms);
    }
    return static_cast<std::uint16_t>(std::stoi(read_text(port_file)));
  }

  void write_cluster(const std::vector<std::uint16_t>& ports, const std::string& backend = "ref",
                     const std::string& name = "cluster.yaml") {
    std::ofstream out(dir_ / name);
    out << "token_file: token\nlink_gbps: 1\nnodes:\n";
    for (std::size_t i = 0; i < ports.size(); ++i)
      out << "  - {name: w" << i << ", address: '127.0.0.1:" << ports[i]
          << "', backend: " << backend << ", target: " << (backend == "sim" ? "kv260" : "host")
          << "}\n";
  }

  // Runs the CLI to completion (bounded) and returns its exit code.
  int run_cli(const std::vector<std::string>& args, const std::string& name,
              std::chrono::milliseconds timeout = 120s) {
    std::vector<std::string> argv = {DPUSHARD_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess child(argv, dir_ / (name + ".out"), dir_ / (name + ".err"));
    const auto status = child.wait_for(timeout);
    if (!status) throw std::runtime_error(name + " did not finish");
    return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
  }

  nlohmann::json json_of(const std::string& name) {
    return nlohmann::json::parse(read_text(dir_ / (name + ".out")));
  }

  // Jobs worker `worker` has loaded so far (event=loaded lines in its log).
  std::size_t loads(int worker) const {
    const std::string text = read_text(dir_ / ("w" + std::to_string(worker) + ".log"));
    std::size_t n = 0;
    for (auto at = text.find("event=loaded"); at != std::string::npos;
         at = text.find("event=loaded", at + 1))
      ++n;
    return n;
  }

  // Waits until worker `worker` has loaded more jobs than `before` (a new plan reached it).
  void wait_for_load(int worker, std::size_t before) const {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (loads(worker) <= before) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("w" + std::to_string(worker) + " never loaded a new job");
      std::this_thread::sleep_for(5ms);
    }
  }

  std::filesystem::path dir_;
  Graph model_;
  std::vector<std::unique_ptr<ChildProcess>> workers_;
};

}  // namespace dpushard::testing

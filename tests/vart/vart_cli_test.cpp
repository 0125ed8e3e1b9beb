// `dpushard exec --backend vart` end to end, on the command line built with the vart backend
// over the VART double (dpushard_on_vart_double), against `dpushard exec --backend ref` on the
// `_int` file with the same .npy inputs: the output hashes must be equal. The real compiled
// Versal fixture, and compiled-equivalent fragments with DPU batches 1 and 4, a runner that
// is not a RunnerExt and tensors in reverse order.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "compile_equivalent.hpp"
#include "dpushard/backend.hpp"
#include "dpushard/builder.hpp"
#include "dpushard/tensor.hpp"
#include "dpushard/xmodel.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = DPUSHARD_FIXTURE_DIR;
const fs::path kWork = fs::path(DPUSHARD_VART_TEST_WORK) / "cli";

// An int8 .npy file (format 1.0) holding `t`.
void write_npy(const fs::path& path, const QTensor& t) {
  std::string shape;
  for (const auto d : t.shape) shape += std::to_string(d) + ", ";
  std::string header = "{'descr': '|i1', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const auto size = static_cast<std::uint16_t>(header.size());
  out.put(static_cast<char>(size & 0xff));
  out.put(static_cast<char>(size >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(t.data.data()),
            static_cast<std::streamsize>(t.data.size()));
}

// Runs `exec FILE --backend B --input ... --json` and returns the outputs array.
nlohmann::json exec(const std::string& cli, const std::string& env, const fs::path& file,
                    const std::string& backend, const std::vector<fs::path>& inputs) {
  std::string command = env + " '" + cli + "' exec '" + file.string() + "' --backend " + backend;
  for (const auto& in : inputs) command += " --input '" + in.string() + "'";
  const fs::path out = kWork / ("out-" + backend + ".json");
  command += " --json >'" + out.string() + "' 2>'" + (kWork / "stderr.txt").string() + "'";
  const int status = std::system(command.c_str());
  std::ifstream err(kWork / "stderr.txt");
  std::stringstream text;
  text << err.rdbuf();
  EXPECT_EQ(status, 0) << command << "\n" << text.str();
  std::ifstream in(out);
  return nlohmann::json::parse(in)["outputs"];
}

// vart (double) on `compiled` against ref on `int_file`, with seeded int8 inputs.
void expect_same_outputs(const fs::path& compiled, const fs::path& int_file,
                         const std::string& settings) {
  SCOPED_TRACE(compiled.filename().string() + " " + settings);
  fs::create_directories(kWork);
  std::vector<fs::path> inputs;
  std::uint64_t seed = 1;
  for (const QTensor& spec : input_specs(read_xmodel(int_file))) {
    inputs.push_back(kWork / ("input" + std::to_string(seed) + ".npy"));
    write_npy(inputs.back(), random_qtensor(spec.name, spec.shape, spec.fix_point, seed++));
  }
  const auto expected = exec(DPUSHARD_CLI, "", int_file, "ref", inputs);
  const auto actual =
      exec(DPUSHARD_VART_CLI, "DPUSHARD_VART_DOUBLE_INT='" + int_file.string() + "' " + settings,
           compiled, "vart", inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t o = 0; o < expected.size(); ++o) {
    EXPECT_EQ(actual[o]["shape"], expected[o]["shape"]);
    EXPECT_EQ(actual[o]["fix_point"], expected[o]["fix_point"]);
    EXPECT_EQ(actual[o]["sha256"], expected[o]["sha256"]) << "output " << o;
  }
}

TEST(VartCli, CompiledVersalFixtureMatchesRef) {
  for (const char* settings : {"", "DPUSHARD_VART_DOUBLE_BATCH=6"})
    expect_same_outputs(kFixtures / "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel",
                        kFixtures / "resnet20_cifar10_int_quantized.xmodel", settings);
}

TEST(VartCli, CompiledEquivalentFragmentMatchesRef) {
  GraphBuilder b("two_in_two_out");
  const Value x = b.input("x", {1, 6, 6, 8}, 4);
  const Value y = b.input("y", {1, 6, 6, 8}, 5);
  std::vector<std::int8_t> w(8 * 8);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::int8_t>((i * 29) % 19 - 9);
  Conv2dSpec spec;
  spec.kernel = {1, 1};
  spec.pad = {0, 0, 0, 0};
  spec.nonlinear = Nonlinear::Relu;
  const Value c = b.conv2d("conv", x, b.constant("w", {8, 1, 1, 8}, w, 6), std::nullopt, spec, 3);
  b.add("sum", {c, y}, 2);
  b.relu("act", y, 5);
  const Graph int_graph = b.finish();
  fs::create_directories(kWork);
  const fs::path int_file = kWork / "frag_int.xmodel";
  const fs::path compiled = kWork / "frag_compiled.xmodel";
  write_xmodel(int_graph, int_file);
  write_xmodel(vart_test::compile_equivalent(int_graph), compiled);
  for (const char* settings : {"", "DPUSHARD_VART_DOUBLE_BATCH=4",
                               "DPUSHARD_VART_DOUBLE_PLAIN=1 DPUSHARD_VART_DOUBLE_BATCH=4",
                               "DPUSHARD_VART_DOUBLE_REVERSE=1"})
    expect_same_outputs(compiled, int_file, settings);
}

}  // namespace
}  // namespace dpushard

#include "fragment_io.hpp"

#include <openssl/evp.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "dpushard/backend.hpp"
#include "dpushard/regular_file.hpp"
#include "dpushard/xmodel.hpp"

namespace dpushard {

std::string sha256_file(const std::filesystem::path& path) {
  const RegularFile file(path);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error("sha256: cannot initialise OpenSSL");
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t got = ::read(file.fd(), buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(path.string() + ": read error: " + std::strerror(errno));
    if (got == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(got));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

namespace split {

Graph load_fragment(const Plan& plan, const PlanFragment& f, const std::filesystem::path& dir) {
  (void)plan;
  const std::string where = "plan fragment '" + f.name + "'";
  const auto path = dir / f.file;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(where + ": file " + path.string() + " is missing");
  std::string hash;
  try {
    hash = sha256_file(path);  // refuses a folder or a FIFO, naming the path
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  if (hash != f.sha256)
    throw Error(where + ": " + path.string() + " has sha256 " + hash + ", the plan records " +
                (f.sha256.empty() ? std::string("none") : f.sha256));
  Graph g = read_xmodel(path);
  const auto specs = input_specs(g);
  if (specs.size() != f.inputs.size())
    throw Error(where + ": the file has " + std::to_string(specs.size()) + " inputs, the plan " +
                std::to_string(f.inputs.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& t = f.inputs[i];
    if (specs[i].name != t.name || specs[i].shape != t.shape || specs[i].fix_point != t.fix_point)
      throw Error(where + ": input " + std::to_string(i) + " is '" + specs[i].name +
                  "' in the file but '" + t.name + "' (or another shape or fix_point) in the plan");
  }
  const auto outs = g.outputs();
  if (outs.size() != f.outputs.size())
    throw Error(where + ": the file has " + std::to_string(outs.size()) + " outputs, the plan " +
                std::to_string(f.outputs.size()));
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto& t = f.outputs[i];
    const auto fp = fix_point_of(g, outs[i]->name);
    const bool fp_ok = t.fixed ? (fp && *fp == t.fix_point) : !fp;
    if (outs[i]->name != t.name || outs[i]->output.shape != t.shape || !fp_ok)
      throw Error(where + ": output " + std::to_string(i) + " is '" + outs[i]->name +
                  "' in the file but '" + t.name + "' (or another shape or fix_point) in the plan");
  }
  return g;
}

}  // namespace split

void check_plan_files(const Plan& plan, const std::filesystem::path& dir) {
  for (const auto& f : plan.fragments) (void)split::load_fragment(plan, f, dir);
}

}  // namespace dpushard

// Writing a plan folder: fragments first, plan.yaml last. Only what an earlier plan of
// ours wrote there is replaced or removed; a folder holding anything else is refused.
#include <set>

#include "dpushard/base/sha256.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;

// The fragment files of the plan already in `dir`, which the new plan replaces. A new or
// empty folder has none; a non-empty folder without a readable plan.yaml is not ours to
// write into (its files may be someone's work).
// What a split that failed before writing plan.yaml leaves: fragments/ holding fragment
// files (NAME_int.xmodel, or an atomic write's hidden temporary) and nothing else.
bool only_unfinished_fragments(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename() != "fragments" || !entry.is_directory(ec)) return false;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir / "fragments", ec)) {
    const std::string name = entry.path().filename().string();
    const bool fragment = name.size() > 11 && name.ends_with("_int.xmodel");
    const bool temporary = name.starts_with(".") && name.find(".tmp.") != std::string::npos;
    if (!entry.is_regular_file(ec) || !(fragment || temporary)) return false;
  }
  return !ec;
}

std::set<fs::path> earlier_fragments(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  if (!fs::is_directory(dir, ec)) throw Error(dir.string() + ": exists and is not a folder");
  if (fs::is_empty(dir, ec)) return {};
  if (!fs::exists(dir / "plan.yaml", ec) && only_unfinished_fragments(dir)) {
    // Left by a split that stopped half-way (a full disk, a kill): replaced whole.
    std::set<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir / "fragments", ec))
      files.insert(entry.path());
    return files;
  }
  const std::string refuse = dir.string() +
                             ": the folder is not empty and holds no plan of dpushard's "
                             "(split writes into a new or empty folder, or over an earlier plan)";
  if (!fs::exists(dir / "plan.yaml", ec)) throw Error(refuse);
  Plan earlier;
  try {
    earlier = read_plan(dir);
  } catch (const Error& e) {
    throw Error(refuse + ": " + e.what());
  }
  std::set<fs::path> files;
  for (const PlanFragment& f : earlier.fragments) files.insert(dir / f.file);
  return files;
}

}  // namespace

Plan write_split(SplitResult& result, const fs::path& dir) {
  Plan& plan = result.plan;
  if (result.fragments.size() != plan.fragments.size())
    throw Error("split: internal: fragment graphs and plan entries differ in number");
  const std::set<fs::path> earlier = earlier_fragments(dir);
  std::error_code ec;
  const bool had_plan = fs::exists(dir / "plan.yaml", ec);
  const bool had_dir = fs::exists(dir, ec);
  fs::create_directories(dir / "fragments", ec);
  if (ec) throw Error(dir.string() + ": cannot create folder: " + ec.message());
  std::set<fs::path> written;
  try {
    for (std::size_t i = 0; i < plan.fragments.size(); ++i) {
      auto& f = plan.fragments[i];
      const auto path = dir / f.file;
      write_xmodel(result.fragments[i], path);
      f.sha256 = sha256_file(path);
      written.insert(path);
    }
    write_plan(plan, dir);
  } catch (const Error&) {
    // Nothing half-written stays behind: without an earlier plan, the fragments written so
    // far go (the folder is as empty as it was, so the same command can be run again);
    // over an earlier plan, its plan.yaml stays and the folder stays a plan folder.
    if (!had_plan) {
      for (const fs::path& path : written) fs::remove(path, ec);
      for (const fs::path& path : earlier) fs::remove(path, ec);
      if (fs::is_empty(dir / "fragments", ec)) fs::remove(dir / "fragments", ec);
      if (!had_dir && fs::is_empty(dir, ec)) fs::remove(dir, ec);
    }
    throw;
  }
  // The earlier plan's fragments that the new one does not reuse would only confuse.
  for (const fs::path& old : earlier)
    if (!written.count(old)) fs::remove(old, ec);
  return plan;
}

}  // namespace dpushard

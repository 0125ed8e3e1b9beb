// Writing a plan folder: fragments first, plan.yaml last, stale fragments removed.
#include <set>

#include "dpushard/split.hpp"
#include "dpushard/xmodel.hpp"

namespace dpushard {

Plan write_split(SplitResult& result, const std::filesystem::path& dir) {
  Plan& plan = result.plan;
  if (result.fragments.size() != plan.fragments.size())
    throw Error("split: internal: fragment graphs and plan entries differ in number");
  std::error_code ec;
  std::filesystem::create_directories(dir / "fragments", ec);
  if (ec) throw Error(dir.string() + ": cannot create folder: " + ec.message());
  std::set<std::string> written;
  for (std::size_t i = 0; i < plan.fragments.size(); ++i) {
    auto& f = plan.fragments[i];
    const auto path = dir / f.file;
    write_xmodel(result.fragments[i], path);
    f.sha256 = sha256_file(path);
    written.insert(path.filename().string());
  }
  write_plan(plan, dir);
  // Fragments of an earlier plan in the same folder would only confuse: remove them.
  for (const auto& entry : std::filesystem::directory_iterator(dir / "fragments", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with("_int.xmodel") && !written.count(name))
      std::filesystem::remove(entry.path(), ec);
  }
  return plan;
}

}  // namespace dpushard

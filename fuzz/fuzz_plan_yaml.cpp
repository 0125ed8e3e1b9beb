// libFuzzer target: the plan.yaml reader (plan_from_yaml, which also runs check_plan).
// Bad input must end in dpushard::Error; a plan it accepts must write back to YAML that
// reads back and writes the same text again (text, not Plan::operator==, so a NaN that
// the reader lets through is not mistaken for a difference). Anything else (a crash, a sanitizer
// report, another exception) is a bug.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/plan/plan_yaml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dpushard::Plan plan;
  try {
    plan = dpushard::plan_from_yaml(text, "fuzz/plan.yaml");
  } catch (const dpushard::Error&) {
    return 0;
  }
  const std::string written = dpushard::plan_to_yaml(plan);
  if (dpushard::plan_to_yaml(dpushard::plan_from_yaml(written, "again")) != written) std::abort();
  return 0;
}

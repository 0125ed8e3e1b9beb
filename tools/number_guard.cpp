#include "number_guard.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace dpushard::cli {
namespace {

// The text without one leading '+', which CLI11 accepts and from_chars does not.
std::string_view without_plus(const std::string& text) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  return s;
}

template <typename T>
std::string whole_number_error(const std::string& text) {
  const std::string_view s = without_plus(text);
  T value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range)
    return "'" + text + "' is out of range (" + std::to_string(std::numeric_limits<T>::min()) +
           " to " + std::to_string(std::numeric_limits<T>::max()) + ")";
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    return "'" + text + "' is not a whole number";
  return "";
}

std::string finite_number_error(const std::string& text) {
  if (text.empty()) return "'' is not a number";
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return "'" + text + "' is not a number";
  if (!std::isfinite(value)) return "'" + text + "' is not a finite number";
  return "";
}

CLI::Validator guard_for(const std::string& type) {
  if (type.rfind("UINT", 0) == 0)
    return CLI::Validator(
        [](std::string& text) {
          if (!text.empty() && text.front() == '-') return "'" + text + "' is negative";
          return whole_number_error<std::uint64_t>(text);
        },
        "");
  if (type.rfind("INT", 0) == 0)
    return CLI::Validator([](std::string& text) { return whole_number_error<std::int64_t>(text); },
                          "");
  return CLI::Validator([](std::string& text) { return finite_number_error(text); }, "");
}

}  // namespace

void guard_number_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type.rfind("UINT", 0) == 0 || type.rfind("INT", 0) == 0 || type.rfind("FLOAT", 0) == 0)
      option->check(guard_for(type));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    guard_number_options(*sub);
}

}  // namespace dpushard::cli

#include "dpushard/graph/attr.hpp"

#include <array>

namespace dpushard {

std::string_view attr_kind_name(const AttrValue& value) {
  static constexpr std::array<std::string_view, std::variant_size_v<AttrValue>> kNames = {
      "bool",           "int32",           "uint32",         "int64",
      "uint64",         "float",           "double",         "string",
      "bytes",          "bool_vec",        "int32_vec",      "uint32_vec",
      "int64_vec",      "uint64_vec",      "float_vec",      "double_vec",
      "string_vec",     "bytes_vec",       "map<int32>",     "map<uint32>",
      "map<int64>",     "map<uint64>",     "map<string>",    "map<bytes>",
      "map<int32_vec>", "map<uint32_vec>", "map<int64_vec>", "map<uint64_vec>",
      "map<string_vec>"};
  return kNames[value.index()];
}

namespace {

template <typename... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <typename... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;  // clang 14 needs the guide (fuzz builds)

std::optional<std::int64_t> as_int(const AttrValue& v) {
  return std::visit(
      Overloaded{[](bool b) -> std::optional<std::int64_t> { return b ? 1 : 0; },
                 [](std::int32_t i) -> std::optional<std::int64_t> { return i; },
                 [](std::uint32_t i) -> std::optional<std::int64_t> { return i; },
                 [](std::int64_t i) -> std::optional<std::int64_t> { return i; },
                 [](std::uint64_t i) -> std::optional<std::int64_t> {
                   return static_cast<std::int64_t>(i);
                 },
                 [](const auto&) -> std::optional<std::int64_t> { return std::nullopt; }},
      v);
}

template <typename T>
std::optional<std::vector<std::int64_t>> widen(const AttrValue& v) {
  if (const auto* vec = std::get_if<std::vector<T>>(&v))
    return std::vector<std::int64_t>(vec->begin(), vec->end());
  return std::nullopt;
}

std::optional<std::vector<std::int64_t>> as_ints(const AttrValue& v) {
  if (auto r = widen<std::int32_t>(v)) return r;
  if (auto r = widen<std::int64_t>(v)) return r;
  if (auto r = widen<std::uint32_t>(v)) return r;
  if (const auto* vec = std::get_if<std::vector<std::uint64_t>>(&v)) {
    std::vector<std::int64_t> out;
    for (auto x : *vec) out.push_back(static_cast<std::int64_t>(x));
    return out;
  }
  return std::nullopt;
}

}  // namespace

std::int64_t int_attr(const AttrMap& attrs, std::string_view key, std::int64_t fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  return as_int(it->second).value_or(fallback);
}

std::vector<std::int64_t> ints_attr(const AttrMap& attrs, std::string_view key,
                                    std::string_view owner) {
  auto it = attrs.find(key);
  if (it == attrs.end())
    throw Error(std::string(owner) + ": missing attribute '" + std::string(key) + "'");
  if (auto r = as_ints(it->second)) return *r;
  throw Error(std::string(owner) + ": attribute '" + std::string(key) + "' has kind " +
              std::string(attr_kind_name(it->second)) + ", expected an integer vector");
}

std::vector<std::int64_t> ints_attr_or(const AttrMap& attrs, std::string_view key,
                                       std::vector<std::int64_t> fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto r = as_ints(it->second)) return *r;
  return fallback;
}

std::string string_attr(const AttrMap& attrs, std::string_view key, std::string fallback) {
  if (const auto* s = find_attr<std::string>(attrs, key)) return *s;
  return fallback;
}

bool bool_attr(const AttrMap& attrs, std::string_view key, bool fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto i = as_int(it->second)) return *i != 0;
  return fallback;
}

double float_attr(const AttrMap& attrs, std::string_view key, double fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* f = std::get_if<float>(&it->second)) return static_cast<double>(*f);
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (auto i = as_int(it->second)) return static_cast<double>(*i);
  return fallback;
}

}  // namespace dpushard

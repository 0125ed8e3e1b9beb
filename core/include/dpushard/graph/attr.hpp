#pragma once
// Attribute values of ops, tensors, subgraphs and graphs, mirroring XIR's AttrValue.
// The variant's alternatives follow the order of the oneof in the xmodel schema
// (field number = index + 4), so reading and writing an xmodel loses nothing.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dpushard/base/error.hpp"

namespace dpushard {

// Raw bytes (a const's weights, a DPU subgraph's code). Distinct from std::string so the
// variant can tell XIR's `bytes` from its `string`.
struct Bytes {
  std::string data;
  bool operator==(const Bytes&) const = default;
};

template <typename T>
using StringMap = std::map<std::string, T, std::less<>>;

using AttrValue =
    std::variant<bool, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float, double,
                 std::string, Bytes, std::vector<bool>, std::vector<std::int32_t>,
                 std::vector<std::uint32_t>, std::vector<std::int64_t>, std::vector<std::uint64_t>,
                 std::vector<float>, std::vector<double>, std::vector<std::string>,
                 std::vector<Bytes>, StringMap<std::int32_t>, StringMap<std::uint32_t>,
                 StringMap<std::int64_t>, StringMap<std::uint64_t>, StringMap<std::string>,
                 StringMap<Bytes>, StringMap<std::vector<std::int32_t>>,
                 StringMap<std::vector<std::uint32_t>>, StringMap<std::vector<std::int64_t>>,
                 StringMap<std::vector<std::uint64_t>>, StringMap<std::vector<std::string>>>;

using AttrMap = StringMap<AttrValue>;

// Name of the alternative held, for error messages ("int32", "string", "bytes", ...).
std::string_view attr_kind_name(const AttrValue& value);

// Typed access. get_attr throws dpushard::Error naming `owner` and `key` when the attribute
// is missing or has another kind; find_attr returns nullptr when missing.
template <typename T>
const T* find_attr(const AttrMap& attrs, std::string_view key) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return nullptr;
  return std::get_if<T>(&it->second);
}

template <typename T>
const T& get_attr(const AttrMap& attrs, std::string_view key, std::string_view owner) {
  auto it = attrs.find(key);
  if (it == attrs.end())
    throw Error(std::string(owner) + ": missing attribute '" + std::string(key) + "'");
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  throw Error(std::string(owner) + ": attribute '" + std::string(key) + "' has kind " +
              std::string(attr_kind_name(it->second)));
}

// Integer attribute of any integral kind (int32/uint32/int64/uint64/bool), or `fallback`.
std::int64_t int_attr(const AttrMap& attrs, std::string_view key, std::int64_t fallback);
// Integer vector of int32/uint32/int64/uint64 kind; throws naming owner when absent.
std::vector<std::int64_t> ints_attr(const AttrMap& attrs, std::string_view key,
                                    std::string_view owner);
// Same, but returns `fallback` when absent.
std::vector<std::int64_t> ints_attr_or(const AttrMap& attrs, std::string_view key,
                                       std::vector<std::int64_t> fallback);
std::string string_attr(const AttrMap& attrs, std::string_view key, std::string fallback);
bool bool_attr(const AttrMap& attrs, std::string_view key, bool fallback);
double float_attr(const AttrMap& attrs, std::string_view key, double fallback);

}  // namespace dpushard

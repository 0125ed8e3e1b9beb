#pragma once
// The one strict YAML reader every dpushard input file goes through (plan.yaml, oracle
// files, targets/*.yaml, cluster.yaml). It reads a regular file, checks keys (unknown,
// duplicate, missing), types and ranges, and reports every fault in one format
// (docs/architecture.md "Errors in YAML files"):
//
//   FILE:LINE:COL: path.to.key: message
//
// LINE and COL are 1-based and point at the value (or the key) at fault; the path names
// the key from the top of the document ("fragments[2].cost.ops"; "(top)" is the document
// itself). A syntax error reads "FILE:LINE:COL: not valid YAML: <yaml-cpp's message>". All
// errors are dpushard::Error, one line.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dpushard::yaml {

class Map;

// A node of a document with its path and the file it came from.
class Value {
 public:
  Value(YAML::Node node, std::string path, std::shared_ptr<const std::string> origin,
        YAML::Mark fallback);

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }  // "" for the document itself
  const std::string& origin() const { return *origin_; }
  int line() const;    // 1-based, 0 when unknown
  int column() const;  // 1-based, 0 when unknown
  // "FILE:LINE:COL: path: message" as a dpushard::Error.
  [[noreturn]] void fail(const std::string& message) const;

  bool is_map() const { return node_.IsMap(); }
  bool is_list() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  // A mapping whose keys must all be among `allowed` (else "unknown key (allowed: ...)").
  Map map(std::initializer_list<std::string_view> allowed) const;
  Map map(const std::vector<std::string>& allowed) const;
  // A mapping whose keys are data (op types, names): any plain, unique key.
  Map open_map() const;
  // A sequence, optionally with a size range.
  std::vector<Value> list(std::size_t min_size = 0,
                          std::size_t max_size = std::numeric_limits<std::size_t>::max()) const;

  std::string text() const;           // any scalar, possibly empty
  std::string nonempty_text() const;  // a scalar that is not empty
  bool boolean() const;               // true/false (YAML 1.1 spellings)
  std::int64_t integer(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  int int32(int min = std::numeric_limits<int>::min(),
            int max = std::numeric_limits<int>::max()) const;
  double number(double min = std::numeric_limits<double>::lowest(),
                double max = std::numeric_limits<double>::max()) const;  // finite
  std::vector<std::string> texts() const;                                // a list of scalars
  // [min, max]: two integers within [lo, hi], min <= max.
  std::pair<std::int64_t, std::int64_t> range(
      std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
      std::int64_t hi = std::numeric_limits<std::int64_t>::max()) const;
  // One of the listed spellings: "expected one of A, B, got 'x'".
  template <typename E>
  E choice(std::initializer_list<std::pair<std::string_view, E>> options) const {
    const std::string t = node_.IsScalar() ? node_.Scalar() : std::string();
    for (const auto& [name, value] : options)
      if (node_.IsScalar() && t == name) return value;
    std::string known;
    for (const auto& o : options) known += (known.empty() ? "" : ", ") + std::string(o.first);
    fail("expected one of " + known + ", got '" + t + "'");
  }

 private:
  friend class Map;
  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const std::string> origin_;
  YAML::Mark fallback_;  // the parent's position, for a node without one
};

// A checked mapping: keys are plain scalars, each once.
class Map {
 public:
  explicit Map(Value value);

  const Value& value() const { return value_; }
  [[noreturn]] void fail(const std::string& message) const { value_.fail(message); }
  bool has(std::string_view key) const;
  // The value of a required key; a missing one is "path.key: missing" at the mapping.
  Value get(std::string_view key) const;
  std::optional<Value> find(std::string_view key) const;
  // Every entry in file order.
  std::vector<std::pair<std::string, Value>> entries() const;

 private:
  friend class Value;
  Value child(const std::string& key, const YAML::Node& node, const YAML::Mark& at) const;
  Value value_;
};

// A parsed document; `origin` is the FILE of every message.
class Document {
 public:
  static Document parse(const std::string& text, const std::string& origin);
  // Reads a regular file (dpushard/base/regular_file.hpp; `label` names it in open errors) and
  // parses it with its path as the origin.
  static Document load(const std::filesystem::path& path, const std::string& label = "");

  Value root() const;
  const std::string& origin() const { return *origin_; }
  // "FILE: message", for faults of the document as a whole (a cross-field check).
  [[noreturn]] void fail(const std::string& message) const;

 private:
  Document(YAML::Node root, std::shared_ptr<const std::string> origin)
      : root_(std::move(root)), origin_(std::move(origin)) {}
  YAML::Node root_;
  std::shared_ptr<const std::string> origin_;
};

}  // namespace dpushard::yaml

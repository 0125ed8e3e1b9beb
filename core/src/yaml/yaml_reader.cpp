// The one strict YAML reader (dpushard/yaml/yaml_reader.hpp): locations, paths, checked keys,
// typed scalars.
#include "dpushard/yaml/yaml_reader.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "dpushard/base/error.hpp"
#include "dpushard/base/regular_file.hpp"

namespace dpushard::yaml {
namespace {

std::string location(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return origin;
  return origin + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

std::string shown(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A plain decimal integer: optional sign, digits, nothing else.
bool parse_integer(const std::string& text, std::int64_t& out) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  if (first == last || *first == '+') return false;
  const auto r = std::from_chars(first, last, out);
  return r.ec == std::errc() && r.ptr == last;
}

// A finite decimal number ("1", "-0.5", "2.5e-3"); no inf, nan, hex or booleans.
bool parse_number(const std::string& text, double& out) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  if (first == last || *first == '+') return false;
  const auto r = std::from_chars(first, last, out, std::chars_format::general);
  return r.ec == std::errc() && r.ptr == last && std::isfinite(out);
}

}  // namespace

// ---- Value ----

Value::Value(YAML::Node node, std::string path, std::shared_ptr<const std::string> origin,
             YAML::Mark fallback)
    : node_(std::move(node)),
      path_(std::move(path)),
      origin_(std::move(origin)),
      fallback_(fallback) {}

namespace {
// A node's position; a null value ("key:" with nothing after it) takes its key's.
YAML::Mark mark_of(const YAML::Node& node, const YAML::Mark& fallback) {
  if (node.IsNull() && !fallback.is_null()) return fallback;
  if (node.IsDefined()) {
    const YAML::Mark m = node.Mark();
    if (!m.is_null() && m.line >= 0) return m;
  }
  return fallback;
}
}  // namespace

int Value::line() const {
  const YAML::Mark m = mark_of(node_, fallback_);
  return m.is_null() || m.line < 0 ? 0 : m.line + 1;
}

int Value::column() const {
  const YAML::Mark m = mark_of(node_, fallback_);
  return m.is_null() || m.column < 0 ? 0 : m.column + 1;
}

void Value::fail(const std::string& message) const {
  throw Error(location(*origin_, mark_of(node_, fallback_)) + ": " +
              (path_.empty() ? std::string("(top)") : path_) + ": " + message);
}

Map Value::map(std::initializer_list<std::string_view> allowed) const {
  return map(std::vector<std::string>(allowed.begin(), allowed.end()));
}

Map Value::map(const std::vector<std::string>& allowed) const {
  Map m(*this);
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    bool known = false;
    for (const auto& a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      m.child(key, kv.first, kv.first.Mark()).fail("unknown key (allowed: " + list + ")");
    }
  }
  return m;
}

Map Value::open_map() const { return Map(*this); }

std::vector<Value> Value::list(std::size_t min_size, std::size_t max_size) const {
  if (!node_.IsSequence()) fail("expected a list");
  if (node_.size() < min_size || node_.size() > max_size) {
    if (min_size == max_size) fail("expected a list of " + std::to_string(min_size));
    if (max_size == std::numeric_limits<std::size_t>::max())
      fail("expected a list of at least " + std::to_string(min_size));
    fail("expected a list of " + std::to_string(min_size) + " to " + std::to_string(max_size));
  }
  std::vector<Value> out;
  const YAML::Mark here = mark_of(node_, fallback_);
  for (std::size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], path_ + "[" + std::to_string(i) + "]", origin_, here);
  return out;
}

std::string Value::text() const {
  if (!node_.IsScalar()) fail("expected a string");
  return node_.Scalar();
}

std::string Value::nonempty_text() const {
  std::string t = text();
  if (t.empty()) fail("must not be empty");
  return t;
}

bool Value::boolean() const {
  bool v = false;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, v)) fail("expected true or false");
  return v;
}

std::int64_t Value::integer(std::int64_t min, std::int64_t max) const {
  std::int64_t v = 0;
  if (!node_.IsScalar() || !parse_integer(node_.Scalar(), v)) fail("expected an integer");
  if (v < min || v > max)
    fail("is " + node_.Scalar() + ", outside [" + std::to_string(min) + ", " + std::to_string(max) +
         "]");
  return v;
}

int Value::int32(int min, int max) const { return static_cast<int>(integer(min, max)); }

double Value::number(double min, double max) const {
  double v = 0;
  if (!node_.IsScalar() || !parse_number(node_.Scalar(), v)) fail("expected a number");
  if (!(v >= min && v <= max))
    fail("is " + node_.Scalar() + ", outside [" + shown(min) + ", " + shown(max) + "]");
  return v;
}

std::vector<std::string> Value::texts() const {
  std::vector<std::string> out;
  for (const Value& item : list()) out.push_back(item.text());
  return out;
}

std::pair<std::int64_t, std::int64_t> Value::range(std::int64_t lo, std::int64_t hi) const {
  if (!node_.IsSequence() || node_.size() != 2) fail("expected [min, max]");
  const auto items = list();
  const std::int64_t a = items[0].integer(lo, hi);
  const std::int64_t b = items[1].integer(lo, hi);
  if (a > b) fail("min is above max");
  return {a, b};
}

// ---- Map ----

Map::Map(Value value) : value_(std::move(value)) {
  if (!value_.is_map()) value_.fail("expected a map");
  std::set<std::string, std::less<>> seen;
  for (const auto& kv : value_.node()) {
    // YAML allows a map or a list as a key ("? ..."): ours are plain names.
    if (!kv.first.IsScalar())
      child("", kv.first, mark_of(kv.first, mark_of(value_.node_, value_.fallback_)))
          .fail("a key must be a plain name");
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) child(key, kv.first, kv.first.Mark()).fail("duplicate key");
  }
}

// The value of `key`; a value without a position (a key with nothing after it) takes `at`.
Value Map::child(const std::string& key, const YAML::Node& node, const YAML::Mark& at) const {
  std::string path = value_.path_;
  if (!key.empty()) path = path.empty() ? key : path + "." + key;
  return Value(node, std::move(path), value_.origin_, at);
}

bool Map::has(std::string_view key) const { return find(key).has_value(); }

std::optional<Value> Map::find(std::string_view key) const {
  for (const auto& kv : value_.node_)
    if (kv.first.Scalar() == key) return child(std::string(key), kv.second, kv.first.Mark());
  return std::nullopt;
}

Value Map::get(std::string_view key) const {
  if (auto v = find(key)) return *v;
  child(std::string(key), YAML::Node(), mark_of(value_.node_, value_.fallback_)).fail("missing");
}

std::vector<std::pair<std::string, Value>> Map::entries() const {
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& kv : value_.node_) {
    std::string key = kv.first.Scalar();
    Value v = child(key, kv.second, kv.first.Mark());
    out.emplace_back(std::move(key), std::move(v));
  }
  return out;
}

// ---- Document ----

Document Document::parse(const std::string& text, const std::string& origin) {
  auto name = std::make_shared<const std::string>(origin);
  try {
    return Document(YAML::Load(text), std::move(name));
  } catch (const YAML::Exception& e) {
    throw Error(location(origin, e.mark) + ": not valid YAML: " + e.msg);
  }
}

Document Document::load(const std::filesystem::path& path, const std::string& label) {
  return parse(read_regular_file(path, label), path.string());
}

Value Document::root() const { return Value(root_, "", origin_, YAML::Mark::null_mark()); }

void Document::fail(const std::string& message) const { throw Error(*origin_ + ": " + message); }

}  // namespace dpushard::yaml

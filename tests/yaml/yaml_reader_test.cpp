// The strict YAML reader: locations, paths, keys (unknown, duplicate, missing), typed scalars
// with ranges, lists, and a regular file.

#include "dpushard/yaml/yaml_reader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dpushard/base/error.hpp"

namespace dpushard::yaml {
namespace {

using ::testing::HasSubstr;

// The message `read` throws for `text` (as "t.yaml"), or "accepted".
template <typename F>
std::string error_of(const std::string& text, F read) {
  try {
    read(Document::parse(text, "t.yaml").root());
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(YamlReader, ReadsTypedValuesWithPaths) {
  const Document doc = Document::parse(
      "name: kv\ncount: 3\nrate: 2.5e-1\non: yes\nitems: [a, b]\nspan: [1, 16]\n"
      "nested:\n  deeper: {x: -4}\n",
      "t.yaml");
  const Map m =
      doc.root().map({"name", "count", "rate", "on", "items", "span", "nested", "absent"});
  EXPECT_EQ(m.get("name").text(), "kv");
  EXPECT_EQ(m.get("count").integer(0, 10), 3);
  EXPECT_EQ(m.get("count").int32(), 3);
  EXPECT_DOUBLE_EQ(m.get("rate").number(0, 1), 0.25);
  EXPECT_TRUE(m.get("on").boolean());
  EXPECT_EQ(m.get("items").texts(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(m.get("span").range(1, 100), (std::pair<std::int64_t, std::int64_t>{1, 16}));
  EXPECT_FALSE(m.has("absent"));
  EXPECT_FALSE(m.find("absent").has_value());
  const Value x = m.get("nested").map({"deeper"}).get("deeper").map({"x"}).get("x");
  EXPECT_EQ(x.path(), "nested.deeper.x");
  EXPECT_EQ(x.integer(), -4);
  EXPECT_EQ(x.line(), 8);
  EXPECT_EQ(x.column(), 15);
  const auto items = m.get("items").list();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].path(), "items[1]");
  EXPECT_EQ(items[1].line(), 5);
  EXPECT_EQ(items[1].column(), 12);
  // Open maps keep the file's order.
  const auto entries = Document::parse("z: 1\na: 2\n", "t.yaml").root().open_map().entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].first, "z");
  EXPECT_EQ(entries[1].second.path(), "a");
}

TEST(YamlReader, KeysAreCheckedInTheOneFormat) {
  const auto strict = [](const Value& v) { v.map({"alpha", "beta"}).get("alpha"); };
  EXPECT_EQ(error_of("alpha: 1\ngamma: 2\n", strict),
            "t.yaml:2:1: gamma: unknown key (allowed: alpha, beta)");
  EXPECT_EQ(error_of("beta: 1\n", strict), "t.yaml:1:1: alpha: missing");
  EXPECT_EQ(error_of("outer:\n  beta: 1\n",
                     [](const Value& v) { v.map({"outer"}).get("outer").map({"beta"}).get("x"); }),
            "t.yaml:2:3: outer.x: missing");
  EXPECT_EQ(error_of("alpha: 1\nalpha: 2\n", strict), "t.yaml:2:1: alpha: duplicate key");
  EXPECT_EQ(error_of("? [a, b]\n: 1\n", strict), "t.yaml:1:3: (top): a key must be a plain name");
  EXPECT_EQ(error_of("- 1\n", strict), "t.yaml:1:1: (top): expected a map");
  EXPECT_EQ(error_of("", strict), "t.yaml: (top): expected a map");
}

TEST(YamlReader, ScalarsAreTypedAndRanged) {
  const auto field = [](const char* key, auto read) {
    return [key, read](const Value& v) { read(v.open_map().get(key)); };
  };
  const auto integer = field("n", [](const Value& v) { v.integer(1, 64); });
  EXPECT_EQ(error_of("n: 8\n", integer), "accepted");
  EXPECT_EQ(error_of("n: 8.5\n", integer), "t.yaml:1:4: n: expected an integer");
  EXPECT_EQ(error_of("n: 0x10\n", integer), "t.yaml:1:4: n: expected an integer");
  EXPECT_EQ(error_of("n: [1]\n", integer), "t.yaml:1:4: n: expected an integer");
  EXPECT_EQ(error_of("n: 0\n", integer), "t.yaml:1:4: n: is 0, outside [1, 64]");
  EXPECT_EQ(error_of("n: 99999999999999999999\n", integer), "t.yaml:1:4: n: expected an integer");
  EXPECT_EQ(error_of("n:\n", integer), "t.yaml:1:1: n: expected an integer");  // at its key
  EXPECT_EQ(error_of("n: 3000000000\n", field("n", [](const Value& v) { v.int32(); })),
            "t.yaml:1:4: n: is 3000000000, outside [-2147483648, 2147483647]");
  const auto number = field("x", [](const Value& v) { v.number(0, 1); });
  EXPECT_EQ(error_of("x: 0.5\n", number), "accepted");
  EXPECT_EQ(error_of("x: true\n", number), "t.yaml:1:4: x: expected a number");
  EXPECT_EQ(error_of("x: .nan\n", number), "t.yaml:1:4: x: expected a number");
  EXPECT_EQ(error_of("x: 1e999\n", number), "t.yaml:1:4: x: expected a number");
  EXPECT_EQ(error_of("x: 1.5\n", number), "t.yaml:1:4: x: is 1.5, outside [0, 1]");
  EXPECT_EQ(error_of("b: 3\n", field("b", [](const Value& v) { v.boolean(); })),
            "t.yaml:1:4: b: expected true or false");
  EXPECT_EQ(error_of("s: {a: 1}\n", field("s", [](const Value& v) { v.text(); })),
            "t.yaml:1:4: s: expected a string");
  EXPECT_EQ(error_of("s: ''\n", field("s", [](const Value& v) { v.nonempty_text(); })),
            "t.yaml:1:4: s: must not be empty");
  EXPECT_EQ(error_of("r: [16, 1]\n", field("r", [](const Value& v) { v.range(); })),
            "t.yaml:1:4: r: min is above max");
  EXPECT_EQ(error_of("r: [1]\n", field("r", [](const Value& v) { v.range(); })),
            "t.yaml:1:4: r: expected [min, max]");
  EXPECT_EQ(error_of("l: [a, [b]]\n", field("l", [](const Value& v) { v.texts(); })),
            "t.yaml:1:8: l[1]: expected a string");
  EXPECT_EQ(error_of("l: []\n", field("l", [](const Value& v) { v.list(1); })),
            "t.yaml:1:4: l: expected a list of at least 1");
  EXPECT_EQ(error_of("l: 1\n", field("l", [](const Value& v) { v.list(); })),
            "t.yaml:1:4: l: expected a list");
  enum class Mode { Fast, Slow };
  const auto mode = field("m", [](const Value& v) {
    EXPECT_EQ(v.choice<Mode>({{"fast", Mode::Fast}, {"slow", Mode::Slow}}), Mode::Fast);
  });
  EXPECT_EQ(error_of("m: fast\n", mode), "accepted");
  EXPECT_EQ(error_of("m: warp\n", mode), "t.yaml:1:4: m: expected one of fast, slow, got 'warp'");
}

TEST(YamlReader, SyntaxErrorsAndFiles) {
  try {
    Document::parse("a: [1, 2\n", "t.yaml");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("t.yaml:2:1: not valid YAML: "));
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("dpushard-yaml-reader-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ok.yaml") << "a: 1\n";
  const Document doc = Document::load(dir / "ok.yaml");
  EXPECT_EQ(doc.origin(), (dir / "ok.yaml").string());
  EXPECT_EQ(doc.root().open_map().get("a").integer(), 1);
  // A folder or a FIFO is refused by name (dpushard/base/regular_file.hpp), not read.
  std::filesystem::create_directory(dir / "folder.yaml");
  ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
  for (const char* name : {"folder.yaml", "fifo.yaml", "missing.yaml"}) {
    try {
      Document::load(dir / name, "target file x");
      ADD_FAILURE() << name;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("target file x")) << name;
    }
  }
  EXPECT_THROW(doc.fail("cross-field"), Error);
  try {
    doc.fail("fragment 'a': duplicate name");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "ok.yaml").string() + ": fragment 'a': duplicate name");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dpushard::yaml

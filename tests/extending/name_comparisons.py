#!/usr/bin/python3
"""ctest Extending.NoNameComparisonsOutsideTheRegistries: no source outside the registries
compares a backend or a strategy name (docs/extending.md). Code that needs to know what a
backend or a strategy does asks the backend registry's traits (dpushard/backend.hpp) or the
strategy table (dpushard/strategy_table.hpp), so that adding one touches its own files and
the registration, not every caller.

  name_comparisons.py SOURCE_DIR DPUSHARD            scan the tree
  name_comparisons.py SOURCE_DIR DPUSHARD FILE...    scan these files only (the self-test)

The names come from the program itself (`dpushard backends --json`, `dpushard split
--list-strategies --json`), so a new backend or strategy is covered without editing this
file. Flagged: `== "NAME"`, `"NAME" !=`, `rfind("NAME"`, `starts_with("NAME")`,
`index_of("NAME")`, `IsMember({...})` and brace lists holding two different names of one kind.
"""
import json
import pathlib
import re
import subprocess
import sys

# The registries, where names are compared by design; paths relative to the source tree.
# The planner (core/src/split) asks the strategy table and its planners' registry by name.
ALLOWED = [
    "core/src/exec/registry.cpp",        # the backend registry
    "core/src/plan/strategy_table.cpp",  # the strategy table
]
SCANNED = ["core", "tools", "bench", "fuzz"]
SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".py", ".in"}


def names(dpushard):
    def run(*args):
        return json.loads(subprocess.run([dpushard, *args], check=True, capture_output=True,
                                         text=True).stdout)
    backends = [b["name"] for b in run("backends", "--json")["backends"]]
    strategies = [s["name"] for s in run("split", "--list-strategies", "--json")["strategies"]]
    return {"backend": backends, "strategy": strategies}


def patterns(kinds):
    out = []
    for kind, words in kinds.items():
        alt = "|".join(re.escape(w) for w in words)
        q = f'"(?:{alt})"'
        out.append((kind, re.compile(rf'(?:==|!=)\s*{q}|{q}\s*(?:==|!=)')))
        out.append((kind, re.compile(rf'(?:rfind|starts_with|index_of|compare)\(\s*{q}')))
        out.append((kind, re.compile(rf'IsMember\(\s*\{{[^}}]*{q}')))
        out.append((kind, BraceList(words)))
    return out


class BraceList:
    """A brace list holding two different names of one kind: a fixed list of them."""

    def __init__(self, words):
        self.words = set(words)

    def search(self, code):
        for body in re.findall(r"\{([^{}]*)\}", code):
            if len(self.words & set(re.findall(r'"([^"]*)"', body))) >= 2:
                return True
        return False


def scan(path, rel, checks):
    found = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return found
    for number, line in enumerate(lines, 1):
        code = line.split("//")[0] if path.suffix != ".py" else line.split("#")[0]
        for kind, pattern in checks:
            if pattern.search(code):
                found.append(f"{rel}:{number}: compares a {kind} name: {line.strip()}")
                break
    return found


def main():
    src = pathlib.Path(sys.argv[1]).resolve()
    checks = patterns(names(sys.argv[2]))
    if len(sys.argv) > 3:
        files = [pathlib.Path(f).resolve() for f in sys.argv[3:]]
    else:
        files = [p for d in SCANNED for p in sorted((src / d).rglob("*"))
                 if p.is_file() and p.suffix in SUFFIXES]
    found = []
    for path in files:
        rel = path.relative_to(src).as_posix() if path.is_relative_to(src) else str(path)
        if any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in ALLOWED):
            continue
        found += scan(path, rel, checks)
    for f in found:
        print(f"name_comparisons: {f}", file=sys.stderr)
    if found:
        print("name_comparisons: FAILED: ask the backend's traits (dpushard/backend.hpp) or the "
              "strategy table (dpushard/strategy_table.hpp) instead (docs/extending.md)",
              file=sys.stderr)
        return 1
    print(f"name_comparisons: OK: {len(files)} files, no backend or strategy name compared "
          "outside the registries")
    return 0


sys.exit(main())

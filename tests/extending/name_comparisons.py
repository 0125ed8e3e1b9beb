#!/usr/bin/python3
"""ctest Extending.NoNameComparisonsOutsideTheRegistries: no source outside the registries
compares a backend or a strategy name (docs/extending.md). Code that needs to know what a
backend or a strategy does asks the backend registry's traits (dpushard/exec/backend.hpp) or the
strategy table (dpushard/plan/strategy_table.hpp), so that adding one touches its own files and
the registration, not every caller. On the Ansible side (playbooks/: YAML and Jinja
templates) no file compares a backend name: the roles ask the common role's table of
backends and their traits (playbooks/roles/common/vars/main.yml, `_common_backends`).

  name_comparisons.py SOURCE_DIR DPUSHARD            scan the tree
  name_comparisons.py SOURCE_DIR DPUSHARD FILE...    scan these files only (the self-test)

The names come from the program itself (`dpushard backends --json`, `dpushard split
--list-strategies --json`), so a new backend or strategy is covered without editing this
file. Flagged in sources: `== "NAME"`, `"NAME" !=`, `rfind("NAME"`, `starts_with("NAME")`,
`index_of("NAME")`, `IsMember({...})` and brace lists holding two different names of one kind.
Flagged in playbooks/ (backend names, quoted either way): `== 'NAME'`, `'NAME' !=`,
`in [... 'NAME' ...]`, `'NAME' in`, `is match('NAME')` and the other tests and
select('equalto', 'NAME'), and a flow list holding two backend names (`[sim, vart]`).
A self-test file NAME.EXT.txt is read as NAME.EXT.
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
    "playbooks/roles/common/vars/main.yml",  # the Ansible side's table of backends
]
SCANNED = ["core", "tools", "bench", "fuzz", "playbooks"]
SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".py", ".in"}
ANSIBLE_SUFFIXES = {".yml", ".yaml", ".j2"}


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


def ansible_patterns(kinds):
    """YAML and Jinja: the backends only (the playbooks name no strategy in a comparison, and
    words such as `auto` are also values of other variables there)."""
    words = kinds["backend"]
    alt = "|".join(re.escape(w) for w in words)
    q = rf"""\\?['"](?:{alt})\\?['"]"""  # quoted, also escaped inside a YAML "..."
    tests = "match|search|regex|equalto|eq|sameas|contains|in"
    return [("backend", re.compile(rf"(?:==|!=)\s*{q}|{q}\s*(?:==|!=)")),
            ("backend", re.compile(rf"\bin\s*[\[(][^\])]*{q}|{q}\s+(?:not\s+)?in\b")),
            ("backend", re.compile(rf"\bis\s+(?:not\s+)?(?:{tests})\b\s*\(?\s*{q}")),
            ("backend", re.compile(rf"""['"](?:{tests}|==|!=)['"]\s*,\s*{q}""")),
            ("backend", FlowList(words))]


class FlowList:
    """A YAML or Jinja list holding two different backend names: a fixed list of them."""

    def __init__(self, words):
        self.words = set(words)

    def search(self, code):
        for body in re.findall(r"\[([^\[\]]*)\]", code):
            items = {item.strip().strip("'\"") for item in body.split(",")}
            if len(self.words & items) >= 2:
                return True
        return False


class BraceList:
    """A brace list holding two different names of one kind: a fixed list of them."""

    def __init__(self, words):
        self.words = set(words)

    def search(self, code):
        for body in re.findall(r"\{([^{}]*)\}", code):
            if len(self.words & set(re.findall(r'"([^"]*)"', body))) >= 2:
                return True
        return False


def suffix(path):
    return pathlib.Path(path.name[:-4]).suffix if path.suffix == ".txt" else path.suffix


def code_of(line, kind):
    if kind in ANSIBLE_SUFFIXES:  # a YAML or shell comment: `#` at the start or after a blank
        return re.split(r"(?:^|\s)#(?:\s|$)", line)[0]
    return line.split("#")[0] if kind == ".py" else line.split("//")[0]


def scan(path, rel, checks):
    found = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return found
    for number, line in enumerate(lines, 1):
        code = code_of(line, suffix(path))
        for kind, pattern in checks:
            if pattern.search(code):
                found.append(f"{rel}:{number}: compares a {kind} name: {line.strip()}")
                break
    return found


def main():
    src = pathlib.Path(sys.argv[1]).resolve()
    kinds = names(sys.argv[2])
    checks, ansible_checks = patterns(kinds), ansible_patterns(kinds)
    if len(sys.argv) > 3:
        files = [pathlib.Path(f).resolve() for f in sys.argv[3:]]
    else:
        files = [p for d in SCANNED for p in sorted((src / d).rglob("*"))
                 if p.is_file() and p.suffix in SUFFIXES | ANSIBLE_SUFFIXES]
    found = []
    for path in files:
        rel = path.relative_to(src).as_posix() if path.is_relative_to(src) else str(path)
        if any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in ALLOWED):
            continue
        found += scan(path, rel, ansible_checks if suffix(path) in ANSIBLE_SUFFIXES else checks)
    for f in found:
        print(f"name_comparisons: {f}", file=sys.stderr)
    if found:
        print(f"name_comparisons: FAILED: {len(found)} comparisons: ask the backend's traits "
              "(dpushard/exec/backend.hpp; in playbooks/, the common role's _common_backends) or the "
              "strategy table (dpushard/plan/strategy_table.hpp) instead (docs/extending.md)",
              file=sys.stderr)
        return 1
    print(f"name_comparisons: OK: {len(files)} files, no backend or strategy name compared "
          "outside the registries")
    return 0


sys.exit(main())

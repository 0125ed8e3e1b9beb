#!/usr/bin/python3
"""ctest Extending.ModulesIncludeOnlyWhatTheyLink: every public header lives in the folder of
the module that owns it (core/include/dpushard/<module>/), and a module's sources and headers
include another module's headers only when the module links it, directly or through its
dependencies (docs/architecture.md). The dependencies are read from the `DEPS` of each
`dpushard_module(...)` in core/src, so the check follows the CMake files, not a copy of them.

  module_includes.py SOURCE_DIR                 check the tree
  module_includes.py SOURCE_DIR FILE MODULE     check FILE as a source of MODULE (the self-test)

A backend's public header (`dpushard/exec/<name>_backend.hpp`) belongs to the backend's own
library, as its folder's `dpushard_backend(... LIBRARY ... HEADER ...)` says. One exception by
design: `dpushard/base/error.hpp` is header-only, and `graph` includes it without linking
`base` (which would bring OpenSSL into the IR).
"""
import pathlib
import re
import sys

HEADER_ONLY = {"base/error.hpp"}
MODULE_CALL = re.compile(r"dpushard_module\(\s*(\w+)(.*?)\)\s*$", re.S | re.M)
BACKEND_CALL = re.compile(r"dpushard_backend\((.*?)\)", re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"dpushard/(\w+)/([\w/.]+)"', re.M)


def modules(root):
    """library name -> (header folder, source folder, direct dpushard deps)."""
    found = {}
    for cmake in sorted((root / "core/src").rglob("CMakeLists.txt")):
        for m in MODULE_CALL.finditer(cmake.read_text()):
            name, body = m.group(1), m.group(2)
            deps = body.split("DEPS", 1)[1] if "DEPS" in body else ""
            direct = {d[len("dpushard_"):] for d in re.findall(r"\bdpushard_\w+", deps)}
            found[name] = (name.split("_")[0], cmake.parent, direct)
    return found


def backend_headers(root):
    """public header (relative to core/include) -> the backend library that owns it."""
    owners = {}
    for cmake in (root / "core/src").rglob("CMakeLists.txt"):
        for m in BACKEND_CALL.finditer(cmake.read_text()):
            words = m.group(1).split()
            fields = dict(zip(words[::2], words[1::2]))
            lib, header = fields.get("LIBRARY", ""), fields.get("HEADER", "")
            if lib.startswith("dpushard_") and header.startswith("dpushard/"):
                owners[header] = lib[len("dpushard_"):]
    return owners


def closure(name, found):
    """Every dpushard_* library `name` links, directly or through others. A dependency that
    is no dpushard_module (dpushard_xmodel_proto, a generated library) links nothing further
    that this check knows of."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        direct = found[current][2] if current in found else set()
        for dep in direct - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def check_one(root, found, path, name):
    """The includes of `path` that module `name` does not link."""
    reach = {found[d][0] for d in closure(name, found) if d in found} | {found[name][0]}
    out = []
    for m in INCLUDE.finditer(path.read_text()):
        owner, rest = m.group(1), m.group(2)
        if owner in reach or f"{owner}/{rest}" in HEADER_ONLY:
            continue
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        out.append(f"{shown}: includes dpushard/{owner}/{rest}, "
                   f"but dpushard_{name} does not link dpushard_{owner}")
    return out


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    found = modules(root)
    if len(sys.argv) == 4:
        problems = check_one(root, found, pathlib.Path(sys.argv[2]).resolve(), sys.argv[3])
        print("\n".join(problems) or "no include outside what the module links")
        return 1 if problems else 0
    folders = {info[0] for info in found.values()}
    problems = []
    include_dir = root / "core/include/dpushard"
    for loose in sorted(include_dir.glob("*.hpp")):
        problems.append(f"{loose.relative_to(root)}: a public header outside a module's folder")
    for folder in sorted(p.name for p in include_dir.iterdir() if p.is_dir()):
        if folder not in folders:
            problems.append(f"core/include/dpushard/{folder}/: no module of that name in core/src")
    owned_by = backend_headers(root)
    for name, (folder, src, _) in sorted(found.items()):
        # A module's sources: its folder, less the subfolders that are modules of their own.
        own = [p for p in src.rglob("*") if p.suffix in {".cpp", ".hpp", ".in"}
               and not any(o[1] != src and o[1] in p.parents for o in found.values())]
        if src.parent.name == "src":  # the public headers of a top-level module
            own += [h for h in (include_dir / folder).glob("*.hpp")
                    if f"dpushard/{folder}/{h.name}" not in owned_by]
        own += [root / "core/include" / h for h, lib in owned_by.items() if lib == name]
        for path in sorted(own):
            problems += check_one(root, found, path, name)
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"{len(found)} modules: every include of another module's header is linked")
    return 0


if __name__ == "__main__":
    sys.exit(main())

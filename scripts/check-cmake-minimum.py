#!/usr/bin/python3
"""The board builds with Ubuntu 22.04's CMake 3.22 (docs/boards.md). This machine has 3.25, which
accepts everything 3.22 does and more, so a build here cannot show that a newer feature crept
in. This check reads every CMake file and CMakePresets.json and names each use of a command,
keyword, generator expression or variable that CMake added after 3.22 (the "New in version"
notes of CMake's reference documentation, 3.23-3.25, and the presets schema versions).

  check-cmake-minimum.py SOURCE_DIR   (every CMake file of the tree, and its presets)
  check-cmake-minimum.py FILE         (one file, whatever its name)

Exit 0 and one line when nothing newer is used; otherwise one line per use and exit 1.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

MINIMUM = (3, 22)

# (pattern, what it is, the CMake version that added it). Patterns are matched against the
# CMake code with comments removed.
NEWER_FEATURES = [
    (r"\bFILE_SET\b", "target_sources/install FILE_SET", "3.23"),
    (r"\bHEADER_SETS?\b", "header sets", "3.23"),
    (r"\bINITIALIZE_FROM_VARIABLE\b", "define_property(INITIALIZE_FROM_VARIABLE)", "3.23"),
    (r"\$<LINK_LIBRARY:", "$<LINK_LIBRARY:...>", "3.24"),
    (r"\$<LINK_GROUP:", "$<LINK_GROUP:...>", "3.24"),
    (r"\$<PATH:", "$<PATH:...>", "3.24"),
    (r"\$<PATH_EQUAL:", "$<PATH_EQUAL:...>", "3.24"),
    (r"\bPATH_EQUAL\b", "if(PATH_EQUAL)", "3.24"),
    (r"find_package\s*\([^)]*\bGLOBAL\b", "find_package(... GLOBAL)", "3.24"),
    (r"\bCMAKE_FIND_PACKAGE_TARGETS_GLOBAL\b", "CMAKE_FIND_PACKAGE_TARGETS_GLOBAL", "3.24"),
    (r"\bCOMPILE_WARNING_AS_ERROR\b", "(CMAKE_)COMPILE_WARNING_AS_ERROR", "3.24"),
    (r"\bOVERRIDE_FIND_PACKAGE\b", "FetchContent OVERRIDE_FIND_PACKAGE", "3.24"),
    (r"\bDOWNLOAD_EXTRACT_TIMESTAMP\b", "DOWNLOAD_EXTRACT_TIMESTAMP", "3.24"),
    (r"\bCMAKE_PROJECT_TOP_LEVEL_INCLUDES\b", "CMAKE_PROJECT_TOP_LEVEL_INCLUDES", "3.24"),
    (r"\bCMAKE_VERIFY_INTERFACE_HEADER_SETS\b", "CMAKE_VERIFY_INTERFACE_HEADER_SETS", "3.24"),
    (r"(?m)^\s*block\s*\(", "block()", "3.25"),
    (r"(?m)^\s*endblock\s*\(", "endblock()", "3.25"),
    (r"return\s*\([^)]*\bPROPAGATE\b", "return(PROPAGATE)", "3.25"),
    (r"\bGET_MESSAGE_LOG_LEVEL\b", "cmake_language(GET_MESSAGE_LOG_LEVEL)", "3.25"),
    (r"\bif\s*\(\s*(NOT\s+)?LINUX\b", "the LINUX variable (unset, so false, before 3.25)", "3.25"),
    (r"add_subdirectory\s*\([^)]*\bSYSTEM\b", "add_subdirectory(... SYSTEM)", "3.25"),
    (r"\bSOURCES_TYPE\b", "try_compile(SOURCES_TYPE)", "3.25"),
    (r"\$<LIST:", "$<LIST:...>", "3.27"),
    (r"\$<COMPILE_ONLY:", "$<COMPILE_ONLY:...>", "3.27"),
    (r"cmake\s+--fresh\b", "cmake --fresh", "3.24"),
]

# The presets schema each CMake release reads: version 3 is CMake 3.21's, 4 is 3.23's.
PRESETS_VERSION_SINCE = {2: "3.20", 3: "3.21", 4: "3.23", 5: "3.24", 6: "3.25", 7: "3.27"}


def newer_than_minimum(version: str) -> bool:
    return tuple(int(p) for p in version.split(".")) > MINIMUM


def cmake_files(source: Path) -> list[Path]:
    listed = subprocess.run(["git", "-C", str(source), "ls-files", "*CMakeLists.txt", "*.cmake"],
                            capture_output=True, text=True, check=False)
    if listed.returncode == 0 and listed.stdout.strip():
        return [source / line for line in listed.stdout.split()]
    return sorted(p for p in source.rglob("*") if p.is_file() and "build" not in p.parts
                  and (p.name == "CMakeLists.txt" or p.suffix == ".cmake"))


def without_comments(text: str) -> str:
    # A '#' outside a quoted string starts a comment (CMake's bracket comments are not used here).
    return "\n".join(re.sub(r'#(?=(?:[^"]*"[^"]*")*[^"]*$).*', "", line) for line in text.splitlines())


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check-cmake-minimum.py SOURCE_DIR", file=sys.stderr)
        return 2
    source = Path(sys.argv[1])
    found = []
    if source.is_file():
        source, files = source.parent, [source]
    else:
        files = cmake_files(source)
    for path in files:
        code = without_comments(path.read_text())
        for pattern, what, since in NEWER_FEATURES:
            if not newer_than_minimum(since):
                continue
            for match in re.finditer(pattern, code):
                line = code.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(source)}:{line}: {what} needs CMake {since}")
        for match in re.finditer(r"cmake_minimum_required\s*\(\s*VERSION\s+([0-9.]+)", code):
            if newer_than_minimum(".".join(match.group(1).split(".")[:2])):
                found.append(f"{path.relative_to(source)}: cmake_minimum_required({match.group(1)})")
    presets = source / "CMakePresets.json"
    if presets.exists():
        data = json.loads(presets.read_text())
        since = PRESETS_VERSION_SINCE.get(data.get("version"), "a newer CMake")
        if since == "a newer CMake" or newer_than_minimum(since):
            found.append(f"CMakePresets.json: schema version {data.get('version')} needs CMake {since}")
        required = data.get("cmakeMinimumRequired", {})
        if (required.get("major", 0), required.get("minor", 0)) > MINIMUM:
            found.append(f"CMakePresets.json: cmakeMinimumRequired {required}")
    for line in found:
        print(line)
    if found:
        print(f"check-cmake-minimum: {len(found)} uses of CMake newer than "
              f"{MINIMUM[0]}.{MINIMUM[1]} (Ubuntu 22.04's)", file=sys.stderr)
        return 1
    print(f"check-cmake-minimum: {len(files)} CMake files and the presets use nothing newer than "
          f"CMake {MINIMUM[0]}.{MINIMUM[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

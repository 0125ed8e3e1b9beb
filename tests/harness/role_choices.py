#!/usr/bin/python3
"""ctest Ansible.CommonRoleChoicesMatchTheRegistries: the common role's backends and closed
sets of strategy names are the program's own (docs/extending.md). Ansible reads them before
dpushard is built, so they are written out in the role; this test holds them equal to
`dpushard backends --json` and `dpushard split --list-strategies --json`:
- vars/main.yml: _common_backends names every backend the program knows (built here or not:
  vart on a host without Vitis AI), one entry each, with the traits the roles read
  (compiled_models, models_time, needs_target: each as the program reports it; any other
  trait of the program the entry gives must match too) and build_option, the CMake option
  the program names when the backend is not built ("configure with -D<option>=ON"; empty
  when it names none), an option() of cmake/options.cmake;
- meta/argument_specs.yml: neither dpushard_backend nor dpushard_strategies has choices (a
  second list of names: the role checks them against _common_backends and
  _common_strategies); vars/main.yml: _common_strategies are the strategies a user may ask
  for.

  role_choices.py SOURCE_DIR DPUSHARD [BACKENDS_YAML]

BACKENDS_YAML: a file holding _common_backends to check instead of the role's (the test's
own check, Ansible.CommonRoleChoicesCatchAWrongTrait).
"""
import json
import pathlib
import re
import subprocess
import sys

import yaml

src, dpushard = pathlib.Path(sys.argv[1]), sys.argv[2]
role = src / "playbooks/roles/common"
backends_file = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else role / "vars/main.yml"
READ_BY_ROLES = ["compiled_models", "models_time", "needs_target"]


def cli(*args):
    return json.loads(subprocess.run([dpushard, *args], check=True, capture_output=True,
                                     text=True).stdout)


def backend_errors(program, table, cmake_options):
    errors = []
    if sorted(table) != sorted(program):
        errors.append(f"_common_backends names {sorted(table)}, the program says {sorted(program)}")
    for name in sorted(set(table) & set(program)):
        entry, said = table[name] or {}, program[name]
        for key in READ_BY_ROLES + ["build_option"]:
            if key not in entry:
                errors.append(f"_common_backends.{name} has no {key}")
        for key in sorted(set(entry) - {"build_option"}):
            if key not in said or key in ("name", "summary", "built", "not_built", "options"):
                errors.append(f"_common_backends.{name}.{key} is no trait of `backends --json`")
            elif entry[key] != said[key]:
                errors.append(f"_common_backends.{name}.{key} is {entry[key]!r}, the program "
                              f"says {said[key]!r}")
        named = re.search(r"-D(\w+)=ON", said["not_built"])
        want = named.group(1) if named else ""
        have = entry.get("build_option", "")
        if "build_option" in entry and have != want:
            errors.append(f"_common_backends.{name}.build_option is {have!r}, the program "
                          f"names {want!r} (not_built: {said['not_built']!r})")
        if have and have not in cmake_options:
            errors.append(f"_common_backends.{name}.build_option {have} is no option() of "
                          "cmake/options.cmake")
    return errors


program = {b["name"]: b for b in cli("backends", "--json")["backends"]}
strategies = [s["name"] for s in cli("split", "--list-strategies", "--json")["strategies"]
              if s["requestable"]]
table = yaml.safe_load(backends_file.read_text())["_common_backends"]
cmake_options = set(re.findall(r"^option\((\w+)", (src / "cmake/options.cmake").read_text(),
                               re.MULTILINE))
options = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
role_vars = yaml.safe_load((role / "vars/main.yml").read_text())

errors = backend_errors(program, table, cmake_options)
if "choices" in options["dpushard_backend"]:
    errors.append("meta/argument_specs.yml: dpushard_backend has choices, a second list of the "
                  "backends (tasks/main.yml checks it against _common_backends)")
if "choices" in options["dpushard_strategies"]:
    errors.append("meta/argument_specs.yml: dpushard_strategies has choices, a second list of "
                  "the strategies (tasks/main.yml checks it against _common_strategies)")
if role_vars["_common_strategies"] != strategies:
    errors.append(f"_common_strategies is {role_vars['_common_strategies']}, the program says "
                  f"{strategies}")
for e in errors:
    print(f"role_choices: FAILED: common role: {e}", file=sys.stderr)
if not errors:
    traits = ", ".join(f"{name} ({', '.join(f'{k} {table[name][k]}' for k in READ_BY_ROLES)}"
                       f"{', ' + table[name]['build_option'] if table[name]['build_option'] else ''})"
                       for name in sorted(table))
    print(f"role_choices: OK: backends {traits}; strategies {strategies}")
sys.exit(1 if errors else 0)

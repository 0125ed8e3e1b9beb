#!/usr/bin/python3
"""ctest Ansible.CommonRoleChoicesMatchTheRegistries: the common role's closed sets of
backend and strategy names are the program's own (docs/extending.md). Ansible checks them
before dpushard is built, so they are written out in the role; this test holds them equal to
`dpushard backends --json` and `dpushard split --list-strategies --json`:
- meta/argument_specs.yml: dpushard_backend's choices are every backend the program knows
  (built here or not: vart on a host without Vitis AI), dpushard_strategies' choices the
  strategies a user may ask for;
- tasks/main.yml: _common_strategies the same strategies, _common_timing_only_backends the
  backends whose frames take modeled time.

  role_choices.py SOURCE_DIR DPUSHARD
"""
import json
import pathlib
import subprocess
import sys

import yaml

src, dpushard = pathlib.Path(sys.argv[1]), sys.argv[2]


def cli(*args):
    return json.loads(subprocess.run([dpushard, *args], check=True, capture_output=True,
                                     text=True).stdout)


backends = cli("backends", "--json")["backends"]
strategies = cli("split", "--list-strategies", "--json")["strategies"]
want = {
    "dpushard_backend choices": sorted(b["name"] for b in backends),
    "dpushard_strategies choices": [s["name"] for s in strategies if s["requestable"]],
    "_common_strategies": [s["name"] for s in strategies if s["requestable"]],
    "_common_timing_only_backends": sorted(b["name"] for b in backends if b["models_time"]),
}
role = src / "playbooks/roles/common"
options = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
task_vars = yaml.safe_load((role / "tasks/main.yml").read_text())[0]["vars"]
have = {
    "dpushard_backend choices": sorted(options["dpushard_backend"]["choices"]),
    "dpushard_strategies choices": options["dpushard_strategies"]["choices"],
    "_common_strategies": task_vars["_common_strategies"],
    "_common_timing_only_backends": sorted(task_vars["_common_timing_only_backends"]),
}
errors = [f"{key} is {have[key]}, the program says {want[key]}" for key in want if have[key] != want[key]]
for e in errors:
    print(f"role_choices: FAILED: common role: {e}", file=sys.stderr)
if not errors:
    print(f"role_choices: OK: backends {want['dpushard_backend choices']}, strategies "
          f"{want['_common_strategies']}, timing only {want['_common_timing_only_backends']}")
sys.exit(1 if errors else 0)

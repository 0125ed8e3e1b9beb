#!/usr/bin/python3
"""ctest Inventory.LocalShowsAHybridAtFourNodes: inventories/local, as ansible-inventory
reads it, has four workers on 127.0.0.1:7701-7704 (a hybrid plan needs at least four
nodes), sweeps 1 to 4 nodes, and sweeps 4 nodes for a subset that lets the report set the
hybrid against one board and against replicate: hybrid, replicate and auto, at sizes of
dpushard_sizes; every other node count sweeps every strategy of dpushard_strategies that
the common role's defaults name (the subset keys only 4), which must be every strategy the
program offers (`dpushard split --list-strategies --json`).

  local_inventory.py SOURCE_DIR DPUSHARD
"""
import json
import pathlib
import subprocess
import sys

import yaml

src = pathlib.Path(sys.argv[1])
offered = [s["name"] for s in json.loads(subprocess.run(
    [sys.argv[2], "split", "--list-strategies", "--json"],
    check=True, capture_output=True, text=True).stdout)["strategies"] if s["requestable"]]
inventory = json.loads(subprocess.run(
    ["ansible-inventory", "-i", str(src / "inventories/local"), "--list"],
    check=True, capture_output=True, text=True, cwd=src).stdout)
errors = []
workers = inventory["workers"]["hosts"]
hostvars = inventory["_meta"]["hostvars"]
if workers != ["node1", "node2", "node3", "node4"]:
    errors.append(f"workers are {workers}, not node1..node4")
ports = [hostvars[h].get("dpushard_worker_port") for h in workers]
if ports != [7701, 7702, 7703, 7704]:
    errors.append(f"the workers' ports are {ports}, not 7701..7704")
v = hostvars["controller"]
defaults = yaml.safe_load((src / "playbooks/roles/common/defaults/main.yml").read_text())
counts = [int(n) for n in v["dpushard_node_counts"]]
if counts != [1, 2, 3, 4]:
    errors.append(f"dpushard_node_counts is {counts}, not 1..4")
strategies = {int(k): s for k, s in v.get("dpushard_node_strategies", {}).items()}
sizes = {int(k): s for k, s in v.get("dpushard_node_sizes", {}).items()}
if set(strategies) != {4} or not {"hybrid", "replicate", "auto"} <= set(strategies.get(4, [])):
    errors.append(f"dpushard_node_strategies is {strategies}: 4 must sweep hybrid, replicate and auto, no other count listed")
if set(sizes) - {4} or not set(sizes.get(4, v["dpushard_sizes"])) <= set(v["dpushard_sizes"]):
    errors.append(f"dpushard_node_sizes is {sizes}: 4 nodes at sizes of dpushard_sizes {v['dpushard_sizes']}")
# The regime of the published KV260 cluster result (issue 25), on timing-only workers that
# need no weights.
regime = ["1M", "2M", "5M", "10M", "20M", "50M", "100M", "200M"]
if [str(s) for s in v["dpushard_sizes"]] != regime:
    errors.append(f"dpushard_sizes is {v['dpushard_sizes']}, not {regime}")
if v.get("dpushard_zoo_weights", defaults["dpushard_zoo_weights"]) is not False:
    errors.append("dpushard_zoo_weights is not false: the sim workers compute no numerics")
all_strategies = v.get("dpushard_strategies", defaults["dpushard_strategies"])
if not set(offered) <= set(all_strategies):
    errors.append(f"1 to 3 nodes sweep {all_strategies}, not every strategy")
for e in errors:
    print(f"local_inventory: FAILED: {e}", file=sys.stderr)
if not errors:
    print(f"local_inventory: OK: {workers}, 4 nodes: {strategies[4]} at {sizes.get(4, 'every size')}")
sys.exit(1 if errors else 0)

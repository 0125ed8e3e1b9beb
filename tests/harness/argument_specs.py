#!/usr/bin/python3
"""ctest Ansible.ArgumentSpecs: every role of playbooks/roles has a README.md and a
meta/argument_specs.yml whose entry point main types exactly the variables of its
defaults/main.yml (a variable added to the defaults without its spec, or a spec left
after its variable went, fails here), each with a type and a description.

  argument_specs.py SOURCE_DIR
"""
import pathlib
import sys

import yaml

roles = pathlib.Path(sys.argv[1]) / "playbooks" / "roles"
errors = []
for role in sorted(p for p in roles.iterdir() if p.is_dir()):
    if not (role / "README.md").is_file():
        errors.append(f"{role.name}: no README.md")
    specs_file = role / "meta" / "argument_specs.yml"
    if not specs_file.is_file():
        errors.append(f"{role.name}: no meta/argument_specs.yml")
        continue
    specs = yaml.safe_load(specs_file.read_text())["argument_specs"]
    defaults_file = role / "defaults" / "main.yml"
    defaults = set(yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.is_file() else set()
    main = set(specs.get("main", {}).get("options", {}))
    for name in sorted(defaults - main):
        errors.append(f"{role.name}: {name} is in defaults/main.yml but not in argument_specs main")
    for name in sorted(main - defaults):
        errors.append(f"{role.name}: {name} is in argument_specs main but not in defaults/main.yml")
    for entry, spec in specs.items():
        for name, option in spec.get("options", {}).items():
            for key in ("type", "description"):
                if key not in option:
                    errors.append(f"{role.name}: {entry}.{name} has no {key}")
    print(f"argument_specs: {role.name}: {len(main)} variables, entry points {', '.join(specs)}")
for error in errors:
    print(f"argument_specs: FAILED: {error}", file=sys.stderr)
sys.exit(1 if errors else 0)

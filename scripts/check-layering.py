#!/usr/bin/env python3
"""Checks every #include under src/, preload/ and tools/ against the layering table of src/README.md.

The table's rows name a component (`os`, `core`, ..., `preload`, `tools/sentinel`) and, in its last
column, what the component may use. An include of another component's header is allowed only when that
component is in the list (libraries such as libc or libnuma in the list are not Sentinel's and are not
checked: only quoted includes are). Two parts are not areas of their own:
  - `plan model`: the files of src/plan whose .cc is a source of sentinel_plan_model in
    src/plan/CMakeLists.txt; `plan` in a row allows both libraries, `plan model` only the model, and the
    model may not include the rest of plan/ (the planner);
  - include/: the public API headers, which every component may include.
An include that resolves to no file of the tree fails too, so a typo cannot hide a broken layer.
The table itself must have no cycle (a component that may use, through others, itself), so a row that
widens what an area may use cannot make two areas depend on each other.

Usage: check-layering.py [--root DIR] [--self-test]. Exit status 0: every include keeps the table; 1: the
violations, one line each (file:line: what and why); 2: the table or the tree could not be read.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

SOURCE = re.compile(r"\.(h|hh|hpp|c|cc|cpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TOPS = ("src", "preload", "tools")


class TableError(Exception):
    pass


def read_table(root):
    """{component: set of components it may use} from src/README.md's table."""
    path = os.path.join(root, "src", "README.md")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise TableError(f"{path}: {e.strerror}")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.lstrip().startswith("|"):
            continue
        name = cells[0].strip("`")
        if name in ("area", "") or set(cells[0]) <= set("-: "):
            continue
        uses = set()
        for part in cells[-1].split(","):
            uses.add(part.strip().strip("`"))
        rows[name] = uses
    if not rows:
        raise TableError(f"{path}: no layering table (| area | what it is | may use |)")
    return rows


def plan_model_stems(root):
    path = os.path.join(root, "src", "plan", "CMakeLists.txt")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise TableError(f"{path}: {e.strerror}")
    m = re.search(r"add_library\(\s*sentinel_plan_model\s+STATIC\s+([^)]*)\)", text)
    if m is None:
        raise TableError(f"{path}: no add_library(sentinel_plan_model STATIC ...)")
    return {os.path.splitext(s)[0] for s in m.group(1).split()}


def component_of(rel, model_stems):
    """The component a file (path relative to the root) belongs to, or None outside the checked tops."""
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        if parts[1] == "plan":
            stem = os.path.splitext(parts[2])[0]
            return "plan model" if stem in model_stems else "plan"
        return parts[1]
    if parts[0] == "preload":
        return "preload"
    if parts[0] == "tools" and len(parts) > 2:
        return "tools/" + parts[1]
    if parts[0] == "include":
        return "include"
    return None


def resolve(root, including_dir, inc):
    """The included file as a path relative to the root, or None."""
    for base in (including_dir, os.path.join(root, "src"), os.path.join(root, "include")):
        candidate = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(candidate):
            return os.path.relpath(candidate, root)
    return None


def table_cycle(table):
    """A cycle among the table's components (["a", "b", "a"]), or None: a layering has none. `plan model`
    is a part of `plan`'s row; names that are no row (libc, libnuma) are not Sentinel's."""
    def uses(name):
        return sorted({"plan" if u == "plan model" else u for u in table.get(name, ())} & set(table))

    state = {}  # name -> "open" while on the path, "done" after
    def visit(name, path):
        state[name] = "open"
        for u in uses(name):
            if u == name:
                continue
            if state.get(u) == "open":
                return path[path.index(u):] + [u]
            if u not in state:
                found = visit(u, path + [u])
                if found:
                    return found
        state[name] = "done"
        return None

    for name in sorted(table):
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def check(root):
    table = read_table(root)
    model = plan_model_stems(root)
    violations = []
    cycle = table_cycle(table)
    if cycle:
        violations.append(f"src/README.md: the layering table has a cycle: {' -> '.join(cycle)}")
    for top in TOPS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not SOURCE.search(name):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                comp = component_of(rel, model)
                if comp is None:
                    continue
                row = "plan" if comp == "plan model" else comp  # the plan row covers both of its libraries
                if row not in table:
                    violations.append(f"{rel}: component '{comp}' has no row in src/README.md's layering table")
                    continue
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    inc = m.group(1)
                    target = resolve(root, dirpath, inc)
                    if target is None:
                        violations.append(f"{rel}:{line}: \"{inc}\" is no file of the tree")
                        continue
                    used = component_of(target, model)
                    if used is None or used == comp or used == "include":
                        continue
                    allowed = table[row]
                    # `plan` in a row means both of its libraries; the planner may use its own model.
                    if used in allowed or (used == "plan model" and ("plan" in allowed or comp == "plan")):
                        continue
                    violations.append(f"{rel}:{line}: '{comp}' includes {target} ('{used}'); src/README.md lets "
                                      f"'{comp}' use: {', '.join(sorted(allowed))}")
    return violations


def self_test():
    """The check fails on a tree that breaks the table (so its own ctest can fail)."""
    here = os.path.dirname(os.path.abspath(__file__))
    real_root = os.path.dirname(here)
    tmp = tempfile.mkdtemp(prefix="check-layering-")
    try:
        os.makedirs(os.path.join(tmp, "src", "plan"))
        shutil.copy(os.path.join(real_root, "src", "README.md"), os.path.join(tmp, "src", "README.md"))
        shutil.copy(os.path.join(real_root, "src", "plan", "CMakeLists.txt"), os.path.join(tmp, "src", "plan"))
        files = {
            "src/os/os.h": "",
            "src/core/hash.h": '#include "os/os.h"\n',                      # allowed
            "src/core/bad.cc": '#include "place/budget_placer.h"\n',         # core reaching up
            "src/place/budget_placer.h": '#include "core/hash.h"\n',         # allowed
            "src/profile/profile.h": "",
            "src/manage/bad.cc": '#include "profile/profile.h"\n#include "plan/planner.h"\n',
            "src/plan/plan.h": '#include "profile/profile.h"\n',             # model: allowed
            "src/plan/planner.h": '#include "plan/plan.h"\n',                # planner on its model: allowed
            "src/plan/tier_model.h": '#include "plan/planner.h"\n',          # model on the planner
            "src/sampler/typo.cc": '#include "os/no_such.h"\n',
            "src/sampler/status_user.cc": '#include "core/hash.h"\n',       # allowed: sampler uses core
        }
        for rel, body in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            open(os.path.join(tmp, rel), "w").write(body)
        found = check(tmp)
        expected = ["src/core/bad.cc:1", "src/manage/bad.cc:1", "src/manage/bad.cc:2", "src/plan/tier_model.h:1",
                    "src/sampler/typo.cc:1"]
        got = sorted(v.split(": ")[0] for v in found)
        if got != expected:
            print("self-test failed: expected violations at", expected, "got:", *found, sep="\n  ")
            return 1
        # A table in which core may use sampler, which uses core: the cycle is found.
        readme = os.path.join(tmp, "src", "README.md")
        text = open(readme, encoding="utf-8").read()
        core_row = re.search(r"^\| `core` \|.*\| ([^|]*) \|$", text, re.M)
        if core_row is None:
            print("self-test failed: no `core` row in src/README.md's table")
            return 1
        open(readme, "w", encoding="utf-8").write(
            text[:core_row.start(1)] + "sampler, " + text[core_row.start(1):])
        cycles = [v for v in check(tmp) if "cycle" in v]
        if len(cycles) != 1 or "core" not in cycles[0] or "sampler" not in cycles[0]:
            print("self-test failed: a table with core -> sampler -> core gave:", *cycles, sep="\n  ")
            return 1
        print(f"self-test passed: {len(found)} planted violations found, nothing else; a planted cycle found")
        return 0
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    try:
        violations = check(args.root)
    except TableError as e:
        print(f"check-layering: {e}", file=sys.stderr)
        return 2
    for v in violations:
        print(v)
    if violations:
        print(f"check-layering: {len(violations)} include(s) break src/README.md's layering table", file=sys.stderr)
        return 1
    print("check-layering: every include keeps src/README.md's layering table")
    return 0


if __name__ == "__main__":
    sys.exit(main())

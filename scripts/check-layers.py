#!/usr/bin/env python3
"""The layer check: draws the include graph of src/ afresh and fails when it breaks the layering.

Every folder of src/ belongs to one layer (LAYERS below; a layer's subfolders, such as store/sqlite/
or gpu/nvml/, are its implementations and belong to it). A layer may include only itself and the
layers it lists. The check fails on
  (a) an include of a layer that the including layer may not include (a lower layer reaching up,
      or a sideways include between layers that do not know each other),
  (b) a cycle between folders (a folder including its own subfolder of the same layer, an
      interface's factory choosing its driver as store/store.cpp does, is the one edge a cycle may use),
  (c) a source file directly in src/server/ other than main.cpp,
  (d) a header internal to a layer (INTERNAL below) included from outside it,
and on a folder of src/ that no layer claims. Known findings wait in ALLOWED, each with the reason
and the fix; an entry that no longer matches is reported so it can be deleted.

  scripts/check-layers.py            check; exit 1 on a finding
  scripts/check-layers.py --dot      the folder graph in Graphviz dot (dot -Tsvg > layers.svg)
  scripts/check-layers.py --table    the layers, their rank and what each may include
  scripts/check-layers.py --edges    every include between folders, with a count
  scripts/check-layers.py --strict   check with ALLOWED emptied: every finding, known or not

Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import defaultdict

# The layers, lowest first: name -> (folders it owns, layers it may include). A folder is a path
# under src/; a file belongs to the layer of the longest folder that contains it.
LAYERS: dict[str, tuple[list[str], list[str]]] = {
    # Pure domain logic: no I/O, no globals, nothing of ours.
    "core": (["core"], []),
    # The agent <-> server messages, their JSON and the protocol version (issue 15).
    "protocol": (["protocol"], ["core"]),
    # Randomness, hashes, logging, times, the clock, the HTTP client.
    "util": (["util"], ["core"]),
    # The Store interface, its sqlite/ and postgres/ drivers, migrations.
    "store": (["store"], ["core"]),
    # HTTP types, the router and the Boost.Beast server.
    "http": (["server/http"], ["core"]),
    # The GpuBackend interface and nvml/, sim/, cuda/.
    "gpu": (["gpu"], ["core", "util", "protocol"]),
    # The programs that are not the server.
    "agent": (["agent"], ["core", "util", "protocol", "gpu"]),
    "cli": (["cli"], ["core", "util"]),
    "loadgen": (["loadgen"], ["core", "util", "protocol", "gpu"]),
    # The server, bottom up. The Mailer interface and its SMTP/.eml implementations.
    "server/mail": (["server/mail"], ["core", "util"]),
    # Request pipeline, accounts, sessions, idempotency, config, metrics, operator commands.
    "server/platform": (["server/platform"], ["core", "util", "store", "http", "server/mail"]),
    # The areas, in the order they may include each other: an area may include the areas before it,
    # never one after it. Planned areas keep their place so the rule exists before the folder does.
    "server/onboarding": (["server/onboarding"], ["core", "util", "store", "http", "server/mail", "server/platform"]),
    "server/fleet": (["server/fleet"],
                     ["core", "util", "store", "http", "protocol", "server/mail", "server/platform",
                      "server/onboarding"]),
    "server/reliability": (["server/reliability"],
                           ["core", "util", "store", "http", "server/mail", "server/platform", "server/onboarding",
                            "server/fleet"]),
    "server/market": (["server/market"],
                      ["core", "util", "store", "http", "server/mail", "server/platform", "server/onboarding",
                       "server/fleet", "server/reliability"]),
    "server/rentals": (["server/rentals"],
                       ["core", "util", "store", "http", "protocol", "server/mail", "server/platform",
                        "server/onboarding", "server/fleet", "server/reliability", "server/market"]),
    "server/billing": (["server/billing"],
                       ["core", "util", "store", "http", "server/mail", "server/platform", "server/onboarding",
                        "server/fleet", "server/reliability", "server/market", "server/rentals"]),
    "server/payouts": (["server/payouts"],
                       ["core", "util", "store", "http", "server/mail", "server/platform", "server/onboarding",
                        "server/fleet", "server/reliability", "server/market", "server/rentals",
                        "server/billing"]),
}
SERVER_BELOW_EDGE = ["core", "util", "store", "http", "protocol", "server/mail", "server/platform",
                     "server/onboarding", "server/fleet", "server/reliability", "server/market",
                     "server/rentals", "server/billing", "server/payouts"]
LAYERS.update({
    # The edge of the server: endpoints, the embedded dashboard, background workers. They may use
    # every layer of the server below them, not each other.
    "server/api": (["server/api"], SERVER_BELOW_EDGE),
    "server/web": (["server/web"], SERVER_BELOW_EDGE),
    "server/workers": (["server/workers"], SERVER_BELOW_EDGE),
    # gpunex-server's entry point, src/server/main.cpp: wires everything together.
    "server/main": (["server"], SERVER_BELOW_EDGE + ["server/api", "server/web", "server/workers"]),
})

# Known findings, each (including file, included header) -> why it is there and how it goes away.
# An entry keeps the check green while the fix is pending; delete it with the fix.
ALLOWED: dict[tuple[str, str], str] = {
}

# Headers internal to their layer: only files of that layer include them (its drivers, Beast).
INTERNAL: dict[str, str] = {
    "store/driver_util.hpp": "store",
    "store/sqlite/sqlite_store.hpp": "store",
    "store/postgres/postgres_store.hpp": "store",
    "server/http/beast_message.hpp": "http",
    "server/http/server_core.hpp": "http",
}

SOURCE_EXT = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


# Folders whose layer does not extend to their subfolders: src/server/ holds main.cpp, and each of
# its subfolders needs a layer of its own.
NOT_INHERITED = {"server"}


def layer_of_folder(folder: str, owners: dict[str, str]) -> str | None:
    """The layer of a folder under src/ ("" is src/ itself): its own, or its nearest parent's."""
    f = folder
    while True:
        if f in owners and (f == folder or f not in NOT_INHERITED):
            return owners[f]
        if not f:
            return None
        f = os.path.dirname(f)


def scan(src: str):
    """Every source file under src/ (relative path) and the quoted includes that name a file of ours."""
    files: dict[str, list[tuple[int, str]]] = {}
    for root, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if not name.endswith(SOURCE_EXT):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            incs = []
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    target = m.group(2).strip()
                    # Ours: named from src/ (as the build's include path has it), or beside the includer.
                    if os.path.isfile(os.path.join(src, target)):
                        incs.append((lineno, target))
                    elif m.group(1) == '"' and os.path.isfile(os.path.join(os.path.dirname(path), target)):
                        incs.append((lineno, os.path.normpath(os.path.join(os.path.dirname(rel), target))))
            files[rel] = incs
    return files


def folders_of(files) -> set[str]:
    out = set()
    for rel in files:
        d = os.path.dirname(rel)
        while d:
            out.add(d)
            d = os.path.dirname(d)
    return out


def check_table() -> list[str]:
    """The table itself: every listed layer exists, and may-include is acyclic."""
    problems = []
    for name, (_, may) in LAYERS.items():
        for other in may:
            if other not in LAYERS:
                problems.append(f"layer table: {name} lists unknown layer {other}")
    order = list(LAYERS)
    for i, name in enumerate(order):
        for other in LAYERS[name][1]:
            if other in LAYERS and order.index(other) >= i:
                problems.append(f"layer table: {name} may include {other}, which is not below it")
    return problems


def ranks() -> dict[str, int]:
    """A layer's rank: 0 for core, else one more than the highest layer it may include."""
    r: dict[str, int] = {}
    for name, (_, may) in LAYERS.items():  # listed lowest first
        r[name] = 1 + max((r[m] for m in may if m in r), default=-1)
    return r


def sccs(nodes, edges):
    """Tarjan's strongly connected components of size > 1 (or with a self-loop)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def shortest_cycle(comp, graph):
    """The shortest cycle inside a strongly connected set of folders, as [a, b, ..., a]."""
    best = None
    inside = set(comp)
    for start in sorted(comp):
        prev = {start: None}
        queue = [start]
        found = None
        while queue and found is None:
            nxt = []
            for v in queue:
                for w in sorted(graph.get(v, ())):
                    if w not in inside:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            queue = nxt
        if found is None:
            continue
        path = []
        v = found
        while v is not None:  # found back to start along the search tree
            path.append(v)
            v = prev[v]
        path = path[::-1] + [start]
        if best is None or len(path) < len(best):
            best = path
    return best


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.join(here, "..", "src"), help="the src/ folder (default: ../src)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--dot", action="store_true", help="print the folder graph in Graphviz dot")
    mode.add_argument("--table", action="store_true", help="print the layers and what each may include")
    mode.add_argument("--edges", action="store_true", help="print every include between folders")
    ap.add_argument("--strict", action="store_true", help="report the ALLOWED findings too")
    args = ap.parse_args()
    if args.strict:
        ALLOWED.clear()
    src = os.path.normpath(args.src)

    owners = {}
    for name, (folders, _) in LAYERS.items():
        for f in folders:
            owners[f] = name
    rank = ranks()
    files = scan(src)

    # Folder graph: folder -> folder -> [(file, line, header)].
    fedges: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for rel, incs in files.items():
        for lineno, target in incs:
            a, b = os.path.dirname(rel), os.path.dirname(target)
            if a != b:
                fedges[a][b].append((rel, lineno, target))

    if args.table:
        for name, (folders, may) in LAYERS.items():
            present = any(os.path.isdir(os.path.join(src, f)) for f in folders)
            note = "" if present else "  (planned)"
            print(f"{rank[name]:>2}  {name:<20} {', '.join(f + '/' for f in folders):<22} "
                  f"may include: {', '.join(may) or 'nothing of ours'}{note}")
        return 0
    if args.edges:
        for a in sorted(fedges):
            for b in sorted(fedges[a]):
                print(f"{len(fedges[a][b]):>4}  {a or '.'} -> {b}")
        return 0
    if args.dot:
        print("digraph gpunex_src {")
        print('  rankdir=BT; node [shape=box, fontname="Helvetica"]; edge [color="#555555"];')
        by_layer = defaultdict(list)
        for f in sorted(folders_of(files)):
            by_layer[layer_of_folder(f, owners)].append(f)
        for name in LAYERS:
            if not by_layer.get(name):
                continue
            print(f'  subgraph "cluster_{name}" {{ label="{name} (rank {rank[name]})"; style=rounded;')
            for f in by_layer[name]:
                print(f'    "{f}";')
            print("  }")
        for a in sorted(fedges):
            for b in sorted(fedges[a]):
                la, lb = layer_of_folder(a, owners), layer_of_folder(b, owners)
                bad = la != lb and lb not in LAYERS.get(la, ([], []))[1]
                attrs = f'label="{len(fedges[a][b])}"' + (', color=red, fontcolor=red' if bad else "")
                print(f'  "{a}" -> "{b}" [{attrs}];')
        print("}")
        return 0

    findings: list[str] = []
    allowed_seen: set[tuple[str, str]] = set()
    findings += check_table()

    # Every folder has a layer.
    for f in sorted(folders_of(files)):
        if layer_of_folder(f, owners) is None:
            findings.append(f"src/{f}/: no layer claims this folder; add it to LAYERS in scripts/check-layers.py")

    # (c) Only the entry point at the top of src/server/.
    for rel in sorted(files):
        if os.path.dirname(rel) == "server" and rel != "server/main.cpp":
            findings.append(f"src/{rel}: only main.cpp sits directly in src/server/; move it into an area folder")

    # (a) Includes the including layer may not make.
    for rel, incs in sorted(files.items()):
        la = layer_of_folder(os.path.dirname(rel), owners)
        if la is None:
            continue
        for lineno, target in incs:
            lb = layer_of_folder(os.path.dirname(target), owners)
            if lb is None or lb == la or lb in LAYERS[la][1]:
                continue
            key = (rel, target)
            if key in ALLOWED:
                allowed_seen.add(key)
                continue
            way = "up to" if rank[lb] > rank[la] else ("sideways to" if rank[lb] == rank[la] else "to")
            findings.append(f"src/{rel}:{lineno}: includes {target}: layer {la} (rank {rank[la]}) reaches {way} "
                            f"{lb} (rank {rank[lb]}); {la} may include {', '.join(LAYERS[la][1]) or 'nothing of ours'}")

    # (d) Internal headers stay inside their layer.
    for rel, incs in sorted(files.items()):
        la = layer_of_folder(os.path.dirname(rel), owners)
        for lineno, target in incs:
            if target in INTERNAL and INTERNAL[target] != la:
                findings.append(f"src/{rel}:{lineno}: includes {target}, which is internal to layer {INTERNAL[target]}")
    for header in sorted(INTERNAL):
        if header not in files:
            findings.append(f"INTERNAL names src/{header}, which does not exist; correct the list")

    # (b) Cycles between folders, leaving out allow-listed includes and a folder's includes of its own
    # subfolders (an interface's factory choosing a driver).
    graph: dict[str, set[str]] = defaultdict(set)
    for a, targets in fedges.items():
        for b, sites in targets.items():
            if a and b.startswith(a + "/") and layer_of_folder(a, owners) == layer_of_folder(b, owners):
                continue
            if all((rel, t) in ALLOWED for rel, _, t in sites):
                continue
            graph[a].add(b)
    for comp in sccs(set(graph) | {b for bs in graph.values() for b in bs}, graph):
        path = shortest_cycle(comp, graph)
        steps = [f"{a} -> {b} (src/{fedges[a][b][0][0]}:{fedges[a][b][0][1]})" for a, b in zip(path, path[1:])]
        findings.append(f"cycle between folders {' -> '.join(path)}: " + "; ".join(steps) +
                        (f" [{len(comp)} folders in this knot: {', '.join(comp)}]" if len(comp) > len(path) - 1 else ""))

    for key, why in sorted(ALLOWED.items()):
        if key not in allowed_seen:
            print(f"note: ALLOWED entry {key[0]} -> {key[1]} no longer matches an include; delete it",
                  file=sys.stderr)
    if allowed_seen:
        print(f"layers: {len(allowed_seen)} known finding(s) allowed, pending a fix:")
        for key in sorted(allowed_seen):
            print(f"  src/{key[0]} -> {key[1]}: {ALLOWED[key]}")
    n_incs = sum(len(v) for v in files.values())
    if findings:
        print(f"layers: {len(findings)} finding(s) in {len(files)} files, {n_incs} includes:", file=sys.stderr)
        for f in findings:
            print("  " + f, file=sys.stderr)
        print("scripts/check-layers.py --table shows what each layer may include.", file=sys.stderr)
        return 1
    print(f"layers: ok ({len(files)} files, {n_incs} includes, {len(folders_of(files))} folders)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # --dot | head
        sys.stderr.close()
        sys.exit(0)

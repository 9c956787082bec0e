#!/usr/bin/env python3
"""Import cycles between the files of a Rust crate, from its `crate::`, `super::` and `self::` paths.

    python3 .ci/module-cycles.py [SRC_DIR]     (default: src)

Kept in the repository so that CI runs it from a clean clone.

Each file is a node (src/a/b.rs and src/a/b/mod.rs are module a::b); an edge A -> B means A names
`crate::b...` (in a `use` or inline) and B is a file of the crate. Prints every strongly connected
group of two or more files with the names that tie them, and the count; exits 1 if there is any.
Test modules (`#[cfg(test)] mod tests { ... }` in the same file) are counted too: move a test's
needs into dev-only helpers if they close a loop."""
import os, re, sys
from collections import defaultdict

src = sys.argv[1] if len(sys.argv) > 1 else "src"
mods = {}  # module path tuple -> file
for root, _, files in os.walk(src):
    for f in files:
        if not f.endswith(".rs"):
            continue
        p = os.path.join(root, f)
        rel = os.path.relpath(p, src)[:-3].split(os.sep)
        if rel[-1] == "mod":
            rel = rel[:-1]
        if rel in (["lib"], ["main"]):
            rel = []
        mods[tuple(rel)] = p

def resolve(path):
    """Longest module prefix of a crate:: path that is a file."""
    for k in range(len(path), 0, -1):
        if tuple(path[:k]) in mods:
            return tuple(path[:k])
    return None

def uses(text, here):
    """Every crate:: (or super::/self::) path named in the text, as a path from the crate root,
    with `use crate::{a, b::{c}}` groups expanded. `here` is the file's module path."""
    text = re.sub(r"//[^\n]*", "", text)
    parent = list(here[:-1])
    text = re.sub(r"\bsuper::", "crate::" + "".join(x + "::" for x in parent), text)
    text = re.sub(r"\bself::", "crate::" + "".join(x + "::" for x in here), text)
    text = re.sub(r"\buse\s+super\s*;", "", text)
    out = []
    for m in re.finditer(r"\buse\s+crate::([^;]+);", text):
        stack = [([], m.group(1).replace(" ", "").replace("\n", ""))]
        while stack:
            pre, s = stack.pop()
            i = s.find("{")
            if i < 0:
                for part in s.split(","):
                    if part:
                        out.append(pre + [x for x in part.split("::") if x and x != "self"])
                continue
            head = [x for x in s[:i].split("::") if x]
            depth, start, parts = 0, i + 1, []
            for j in range(i, len(s)):
                if s[j] == "{":
                    depth += 1
                elif s[j] == "}":
                    depth -= 1
                    if depth == 0:
                        parts.append(s[start:j]); break
                elif s[j] == "," and depth == 1:
                    parts.append(s[start:j]); start = j + 1
            for part in split_top(parts[0] if len(parts) == 1 else ",".join(parts)):
                stack.append((pre + head, part))
    for m in re.finditer(r"\bcrate::((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)", text):
        out.append(m.group(1).split("::"))
    return out

def split_top(s):
    depth, start, res = 0, 0, []
    for j, c in enumerate(s):
        if c == "{": depth += 1
        elif c == "}": depth -= 1
        elif c == "," and depth == 0:
            res.append(s[start:j]); start = j + 1
    res.append(s[start:])
    return [r for r in res if r]

edges = defaultdict(lambda: defaultdict(set))
for m, f in mods.items():
    for path in uses(open(f, encoding="utf-8", errors="replace").read(), m):
        t = resolve(path)
        if t is None or t == m or (len(t) < len(m) and m[:len(t)] == t):
            continue  # itself, or its own parent module (re-exports)
        edges[m][t].add(path[len(t)] if len(path) > len(t) else "*")

# Tarjan's strongly connected components
index, low, on, stack, sccs, n = {}, {}, set(), [], [], [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1:
            sccs.append(comp)
sys.setrecursionlimit(10000)
for v in list(mods):
    if v not in index:
        visit(v)
name = lambda m: mods[m]
for k, comp in enumerate(sccs, 1):
    print(f"cycle {k}: {len(comp)} files: {', '.join(sorted(name(m) for m in comp))}")
    cs = set(comp)
    for a in sorted(comp, key=name):
        for b in sorted(edges[a], key=name):
            if b in cs:
                print(f"  {name(a)} -> {name(b)}: {', '.join(sorted(edges[a][b]))}")
print(f"{len(sccs)} cycle(s) among {len(mods)} files")
sys.exit(1 if sccs else 0)

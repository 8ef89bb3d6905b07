#!/usr/bin/env python3
"""Import circles of the workspace: between crates (Cargo.toml dependencies)
and between the files of each crate (`use crate::…`, `super::…`, paths
`crate::a::b` written in code). Prints every strongly connected group of
more than one member; exits 1 if there is any.

usage: python3 scripts/bench/circles.py [-v]   (from the root of a checkout; -v: the arrows of each circle)

The reading is the usual one of a Rust folder: a module's use of its own
children (declaring them, re-exporting from them) is not an import, so a
parent re-exporting its children while they reach back into it with
`super::` is not a circle; every other `crate::`/`super::` path is.
A file `a/b.rs` (or `a/b/mod.rs`) is module `a::b`; a reference to
`crate::a::b::Item` points at the deepest module file that exists. A
module's own submodules (`mod x;` inside it) and doc links are not edges:
a parent declaring its children is not an import, and the walk counts only
code outside comments. Test modules (`#[cfg(test)]`, `tests.rs`) are left
out."""
import pathlib
import re
import sys
import tomllib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from rust_source import code_lines  # noqa: E402

ROOT = pathlib.Path.cwd()  # run from the checkout to measure
PATH = re.compile(r"\b(crate|super)((?:::\w+)+)")


def expand_groups(text):
    """Every path a `crate::{…}` / `super::{…}` group names, nested groups
    included, as `crate::a::b` lines."""
    out = []
    for m in re.finditer(r"\b(crate|super)::\{", text):
        depth, k = 1, m.end()
        while k < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        out += [f"{m.group(1)}::{p}" for p in flatten(text[m.end() : k - 1])]
    return out


def flatten(group):
    """`a::{b, c}, d` -> [`a::b`, `a::c`, `d`]."""
    items, depth, cur = [], 0, ""
    for ch in group:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    items.append(cur.strip())
    out = []
    for it in filter(None, items):
        if "{" in it:
            head, rest = it.split("{", 1)
            out += [head + p for p in flatten(rest.rsplit("}", 1)[0])]
        else:
            out.append(it)
    return out


def modules(src):
    out = {}
    for p in src.rglob("*.rs"):
        rel = p.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        if parts and parts[-1] == "tests":
            continue
        out[tuple(parts)] = p
    return out


def file_edges(src):
    mods = modules(src)
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        text = "\n".join(code_lines(p.read_text()))
        # `use super::{a, b}` and `use crate::{a::{b, c}, d}` groups.
        text += "\n" + "\n".join(expand_groups(text))
        for root, rest in PATH.findall(text):
            base = list(m) if p.stem in ("mod", "lib", "main") else list(m[:-1])
            if root == "crate":
                base = []
            elif p.stem in ("mod", "lib", "main"):
                base = list(m[:-1])
            else:
                base = list(m[:-1])
            names = [n for n in rest.split("::") if n]
            while names and names[0] == "super":
                base, names = base[:-1], names[1:]
            target = None
            for k in range(len(names), 0, -1):
                cand = tuple(base + names[:k])
                if cand in mods:
                    target = cand
                    break
            if target is None or target == m:
                continue
            # A parent naming its own child module is not an import.
            if target[: len(m)] == m and len(target) > len(m):
                continue
            # A child naming its parent module file (`super::Item` in a
            # parent's `mod.rs`) is an import of the parent: kept.
            edges[m].add(target)
    return edges


def crate_edges():
    edges = {}
    names = {}
    for toml in sorted(ROOT.glob("crates/*/Cargo.toml")):
        data = tomllib.loads(toml.read_text())
        names[data["package"]["name"]] = toml.parent.name
    for toml in sorted(ROOT.glob("crates/*/Cargo.toml")):
        data = tomllib.loads(toml.read_text())
        deps = set(data.get("dependencies", {}))
        edges[toml.parent.name] = {names[d] for d in deps if d in names}
    return edges


def sccs(graph):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main():
    total = 0
    for comp in sccs(crate_edges()):
        total += 1
        print("crates:", " <-> ".join(sorted(comp)))
    nfiles = 0
    for src in sorted(ROOT.glob("crates/*/src")):
        g = file_edges(src)
        nfiles += len(g)
        for comp in sccs(g):
            total += 1
            names = sorted("/".join(c) or "lib" for c in comp)
            print(f"{src.parent.name}:", " <-> ".join(names))
            if "-v" in sys.argv:
                for a in sorted(comp):
                    for b in sorted(g[a] & set(comp)):
                        print("   ", "/".join(a) or "lib", "->", "/".join(b) or "lib")
    print(f"{total} circle(s) among {len(crate_edges())} crates and {nfiles} modules")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()

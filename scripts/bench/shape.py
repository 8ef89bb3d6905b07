#!/usr/bin/env python3
"""Shape of the workspace's sources: the longest functions and files under
crates/*/src, counted the same way before and after a restructuring.

usage: python3 scripts/bench/shape.py [--top N] [--fn-limit 100] [--file-limit 600]

Exits 1 when a function is over the function limit or a file over the
file limit (each listed), 0 otherwise.

A function's length is the lines from its `fn` line to its closing brace,
found by matching braces outside strings, chars and comments. Functions in
`#[cfg(test)]` modules count too (they are in src/)."""
import argparse
import pathlib
import re
import sys

FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')


def strip(line, state):
    """Drop strings, chars and comments from one line; state carries a block
    comment or raw/plain string across lines."""
    out, i, n = [], 0, len(line)
    while i < n:
        if state["block"]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state["block"], i = False, j + 2
            continue
        if state["str"]:
            end = state["str"]
            if end == '"':
                while i < n and line[i] != '"':
                    i += 2 if line[i] == "\\" else 1
                if i < n:
                    state["str"], i = None, i + 1
                else:
                    return "".join(out)
            else:
                j = line.find(end, i)
                if j < 0:
                    return "".join(out)
                state["str"], i = None, j + len(end)
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"], i = True, i + 2
            continue
        m = re.match(r'r(#*)"', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state["str"], i = '"' + m.group(1), i + len(m.group(0))
            continue
        if c == '"':
            state["str"], i = '"', i + 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|[^\\'])'", line[i:]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    lines = path.read_text().splitlines()
    state = {"block": False, "str": None}
    code = [strip(l, state) for l in lines]
    found = []
    for start, l in enumerate(code):
        m = FN.match(l)
        if not m:
            continue
        depth, opened = 0, False
        for k in range(start, len(code)):
            if not opened and ";" in code[k] and "{" not in code[k]:
                break  # a declaration without a body
            for ch in code[k]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if opened and depth == 0:
                found.append((k - start + 1, f"{path}:{start + 1}", m.group(7)))
                break
    return found, len(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--fn-limit", type=int, default=100)
    ap.add_argument("--file-limit", type=int, default=600)
    a = ap.parse_args()
    fns, files = [], []
    for p in sorted(pathlib.Path("crates").glob("*/src/**/*.rs")):
        f, n = functions(p)
        fns += f
        files.append((n, str(p)))
    fns.sort(reverse=True)
    files.sort(reverse=True)
    over_fn = [f for f in fns if f[0] > a.fn_limit]
    over_file = [f for f in files if f[0] > a.file_limit]
    print(f"functions over {a.fn_limit} lines: {len(over_fn)}")
    for n, where, name in fns[: max(a.top, len(over_fn))]:
        print(f"  {n:5}  {name}  {where}")
    print(f"files over {a.file_limit} lines: {len(over_file)}")
    for n, p in files[: max(a.top, len(over_file))]:
        print(f"  {n:5}  {p}")
    return 1 if over_fn or over_file else 0


if __name__ == "__main__":
    sys.exit(main())

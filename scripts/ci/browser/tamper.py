#!/usr/bin/env python3
"""Wrong verdict tables the check must refuse (scripts/ci/ci-browser.sh).

From a run's report.html (and the files beside it), writes one copy of the
run per tamper under OUT/<name>/ (the run's manifest.json, report/ with its
CSVs and the tampered report.html), and prints each report.html path. Each
tamper is one way a table can mislead a reader: a verdict flipped or
blanked, a row pointed at a kinder rung, a limit, a margin or a count
changed, a row deleted, hidden or moved below the answer.

usage: tamper.py RUN_DIR/report/report.html OUT
"""
import re
import shutil
import sys
from pathlib import Path


def rows(page):
    """The verdict table's rows: (start, end, text) per <tr> of its body."""
    table = re.search(r"<table><thead><tr><th>spec item</th>.*?</table>", page, flags=re.S)
    assert table, "no verdict table"
    return [(table.start() + m.start(), table.start() + m.end(), m.group(0))
            for m in re.finditer(r"<tr><td>.*?</tr>", table.group(0), flags=re.S)]


def row_of(page, item):
    found = [r for r in rows(page) if r[2].startswith(f"<tr><td>{item}")]
    assert found, f"no row {item}"
    return found[0]


def edit_row(page, item, edit):
    start, end, text = row_of(page, item)
    new = edit(text)
    assert new != text, f"{item}: the tamper changed nothing"
    return page[:start] + new + page[end:]


def cells(text):
    return re.findall(r"<td>(.*?)</td>", text, flags=re.S)


def set_cell(text, i, value):
    c = cells(text)
    c[i] = value
    return "<tr>" + "".join(f"<td>{x}</td>" for x in c) + "</tr>"


def other_label(page, now):
    """A passing staggered rung's label to point a row at."""
    labels = re.findall(r"sweep/p[0-9]+ms/staggered/r[0-9]+", page)
    assert labels, "no staggered rung"
    return next(l for l in labels if l != now)


def tampers(page):
    dyn = "Dynamic range (max"
    dyn_label = re.search(r"<code>([^<]+)</code>", cells(row_of(page, dyn)[2])[5]).group(1)
    yield "flipped", re.sub(r"<td><strong>✘ fail</strong>", "<td>✔ pass", page, count=1)
    yield "wrong-row", edit_row(page, dyn, lambda t: t.replace(dyn_label, other_label(page, dyn_label)))
    yield "blanked", edit_row(page, dyn, lambda t: "<tr><td>Dynamic range (max − min)</td><td>none declared</td><td>not measured</td><td>–</td><td>no limit declared</td><td>–</td></tr>")
    yield "bare-verdict", edit_row(page, dyn, lambda t: set_cell(t, 4, "✔"))
    yield "deleted", edit_row(page, dyn, lambda t: "")
    yield "rating-limit", edit_row(page, "Supply rating", lambda t: set_cell(t, 1, "6000 W"))
    yield "rating-row", edit_row(page, "Supply rating", lambda t: re.sub(r"<code>[^<]+</code>", "<code>fabric/fabric</code>", t, count=1))
    yield "count", edit_row(page, "Supply excursion", lambda t: re.sub(r"\((\d+) of", "(1 of", t, count=1))
    yield "margin-sign", edit_row(page, dyn, lambda t: set_cell(t, 3, cells(t)[3].replace("−", "+")))
    yield "excursion-limit", edit_row(page, "Supply excursion", lambda t: set_cell(t, 1, re.sub(r"^[0-9.]+", "9000", cells(t)[1])))
    yield "transparent", edit_row(page, dyn, lambda t: t.replace("<tr>", '<tr style="opacity:0">', 1))
    yield "white-1px", edit_row(page, dyn, lambda t: t.replace("<tr>", '<tr style="color:#fff;font-size:1px">', 1))
    table = re.search(r"<table><thead><tr><th>spec item</th>.*?</table>\n", page, flags=re.S)
    rest = page[:table.start()] + page[table.end():]
    answer = re.search(r"<h2>The answer.*?</ul>", rest, flags=re.S)
    yield "moved", rest[:answer.end()] + table.group(0) + rest[answer.end():]


def main():
    html, out = Path(sys.argv[1]), Path(sys.argv[2])
    page = html.read_text()
    report, run = html.parent, html.parent.parent
    for name, tampered in tampers(page):
        assert tampered != page, f"{name}: the tamper changed nothing"
        dest = out / name
        shutil.copytree(report, dest / "report", ignore=shutil.ignore_patterns("raw", "*.parquet"))
        shutil.copy(run / "manifest.json", dest / "manifest.json")
        (dest / "report" / "report.html").write_text(tampered)
        print(dest / "report" / "report.html")


if __name__ == "__main__":
    main()

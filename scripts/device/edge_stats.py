"""Edge error per rung and GPU from a run directory's edges.csv: start error,
rise and fall |achieved - intended| p50/p99 (µs)."""
import sys, csv, json, collections
d = sys.argv[1].rstrip("/") + "/"
ev = [json.loads(l) for l in open(d + "events.jsonl")]
labels = {e["rung"]["id"]: e["rung"]["label"] for e in ev if e["event"] == "rung_started"}
by = collections.defaultdict(list)
for r in csv.DictReader(open(d + "edges.csv")):
    by[(int(r["rung_id"]), r["gpu"])].append((r["kind"], int(r["achieved_ns"]) - int(r["intended_ns"])))
def q(v, p):
    v = sorted(abs(x) / 1000 for x in v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
allv = []
for (rid, g), rs in sorted(by.items()):
    st = [e for k, e in rs if k == "start"]
    ed = [e for k, e in rs if k != "start"]
    allv += [e for k, e in rs]
    print(f"{labels.get(rid, rid):28s} {g} start {st[0] / 1000:8.1f} µs  edges n={len(ed):5d} p50 {q(ed, .5):7.1f} p99 {q(ed, .99):7.1f} µs")
print(f"ALL EDGES n={len(allv)} p50 {q(allv, .5):.1f} µs p99 {q(allv, .99):.1f} µs")

"""Share of the independent drain's buffered samples that a run's raw files
hold, per GPU, over the run's span (argv[1] run directory, argv[2] drain
JSON). 100 % means the sampler missed none the driver buffered."""
import sys, os, csv, gzip, json
run, drain = sys.argv[1].rstrip("/"), json.load(open(sys.argv[2]))
m = json.load(open(os.path.join(run, "manifest.json")))
t0, t1 = m["started_ns"] // 1000, (m.get("ended_ns") or 0) // 1000
for i, ts in enumerate(drain["ts_us"]):
    key = f"gpu{i}"
    path = next((os.path.join(run, "raw", key + e) for e in (".csv", ".csv.gz") if os.path.exists(os.path.join(run, "raw", key + e))), None)
    if path is None:
        print(f"{key}: no raw file"); continue
    op = gzip.open if path.endswith(".gz") else open
    raw = {int(r["ts_ns"]) // 1000 for r in csv.DictReader(op(path, "rt")) if r["instrument"] == "buffered_w"}
    lo, hi = min(raw), max(raw)
    want = [t for t in ts if lo <= t <= hi]
    got = sum(1 for t in want if t in raw)
    extra = len([t for t in raw if t1 and t0 <= t <= t1]) - got
    print(f"{key} {drain['uuids'][i]}: drain saw {len(want)} buffered samples within the raw span, the run holds {got} ({100 * got / max(1, len(want)):.2f} %); raw samples the drain did not see: {max(0, len(raw) - got)}")

"""Share of the independent drain's buffered samples that a run's raw files
hold, per GPU, over the run's span (argv[1] run directory, argv[2] drain
JSON). 100 % means the sampler missed none the driver buffered.

The driver gives two readers of the same buffered sample timestamps a few
µs apart (seen up to 69 µs on an H200, driver 580): a drained sample is
matched to the nearest raw sample within MATCH_US, one to one. The samples
are at least ~7.6 ms apart, so no match is ambiguous; the largest
difference matched is printed."""
import sys, os, csv, gzip, json, bisect

MATCH_US = 1000
run, drain = sys.argv[1].rstrip("/"), json.load(open(sys.argv[2]))
for i, ts in enumerate(drain["ts_us"]):
    key = f"gpu{i}"
    path = next((os.path.join(run, "raw", key + e) for e in (".csv", ".csv.gz")
                 if os.path.exists(os.path.join(run, "raw", key + e))), None)
    if path is None:
        print(f"{key}: no raw file"); continue
    op = gzip.open if path.endswith(".gz") else open
    raw = sorted(int(r["ts_ns"]) // 1000 for r in csv.DictReader(op(path, "rt"))
                 if r["instrument"] == "buffered_w")
    lo, hi = raw[0] - MATCH_US, raw[-1] + MATCH_US
    want = sorted(t for t in ts if lo <= t <= hi)
    used, got, worst = set(), 0, 0
    for t in want:
        j = bisect.bisect_left(raw, t)
        near = min((k for k in (j - 1, j) if 0 <= k < len(raw)), key=lambda k: abs(raw[k] - t))
        d = abs(raw[near] - t)
        if d <= MATCH_US and near not in used:
            used.add(near); got += 1; worst = max(worst, d)
    print(f"{key} {drain['uuids'][i]}: drain saw {len(want)} buffered samples within the raw span, "
          f"the run holds {got} ({100 * got / max(1, len(want)):.2f} %), timestamps within {worst} µs; "
          f"raw samples the drain did not see: {len(raw) - got}")

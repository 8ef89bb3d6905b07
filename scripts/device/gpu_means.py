"""Per-GPU mean/peak of buffered power in each rung window of a run
directory, and % of the enforced limit (from the manifest)."""
import sys, csv, json, collections, os
run = sys.argv[1]
man = json.load(open(os.path.join(run, "manifest.json")))
limits = {g["key"]: g["power_limit_w"] for g in man["backend"]["gpus"]}
rungs = [json.loads(l) for l in open(os.path.join(run, "events.jsonl")) if '"rung_started"' in l]
want = sys.argv[2:] or None
for key in sorted(limits):
    samples = [(int(r["ts_ns"]), float(r["value"])) for r in csv.DictReader(open(os.path.join(run, "raw", key + ".csv"))) if r["instrument"] == "buffered_w"]
    for r in rungs:
        label = r["rung"]["label"]
        if want and not any(w in label for w in want):
            continue
        v = [p for t, p in samples if r["measure_from_ns"] <= t < r["end_ns"]]
        if v:
            m = sum(v) / len(v)
            print(f"{label:32s} {key}: mean {m:7.1f} W = {100*m/limits[key]:5.1f}% of {limits[key]:.0f} W, peak {max(v):7.1f} W, n={len(v)}")

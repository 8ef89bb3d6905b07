"""Mean buffered power per GPU from `powerlab observe --csv`, skipping the
first and last seconds (warm-up and tail)."""
import sys, csv, collections
path, skip_s = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
rows = [r for r in csv.DictReader(open(path)) if r["instrument"] == "buffered_w"]
t0 = min(int(r["ts_ns"]) for r in rows); t1 = max(int(r["ts_ns"]) for r in rows)
acc = collections.defaultdict(list)
for r in rows:
    t = int(r["ts_ns"])
    if t0 + skip_s * 1e9 <= t <= t1 - 1e9:
        acc[r["gpu"]].append(float(r["value"]))
for g in sorted(acc):
    v = acc[g]
    print(f"{g}: mean {sum(v)/len(v):.1f} W over {len(v)} buffered samples, peak {max(v):.1f} W")

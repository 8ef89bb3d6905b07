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
TWICE_US = 2000  # closer than any two distinct samples (>= 6.5 ms seen)


def matches(want, raw):
    """One-to-one nearest matches within MATCH_US, closest pairs first:
    {drain index: raw index}."""
    cand = []
    for a, (t, _) in enumerate(want):
        j = bisect.bisect_left(raw, (t, -1.0))
        for k in (j - 1, j, j + 1):
            if 0 <= k < len(raw) and abs(raw[k][0] - t) <= MATCH_US:
                cand.append((abs(raw[k][0] - t), a, k))
    got, used = {}, set()
    for _, a, k in sorted(cand):
        if a not in got and k not in used:
            got[a] = k
            used.add(k)
    return got


run, drain = sys.argv[1].rstrip("/"), json.load(open(sys.argv[2]))
for i, ts in enumerate(drain["ts_us"]):
    key = f"gpu{i}"
    path = next((os.path.join(run, "raw", key + e) for e in (".csv", ".csv.gz")
                 if os.path.exists(os.path.join(run, "raw", key + e))), None)
    if path is None:
        print(f"{key}: no raw file"); continue
    op = gzip.open if path.endswith(".gz") else open
    raw = sorted((int(r["ts_ns"]) // 1000, float(r["value"]))
                 for r in csv.DictReader(op(path, "rt")) if r["instrument"] == "buffered_w")
    vals = drain.get("value_mw", [[None] * len(ts) for _ in drain["ts_us"]])[i]
    lo, hi = raw[0][0] - MATCH_US, raw[-1][0] + MATCH_US
    want = sorted((t, v) for t, v in zip(ts, vals) if lo <= t <= hi)
    got = matches(want, raw)
    worst = max((abs(raw[k][0] - want[a][0]) for a, k in got.items()), default=0)
    same = sum(1 for a, k in got.items()
               if want[a][1] is not None and abs(raw[k][1] - want[a][1] / 1000) < 0.0015)
    valued = sum(1 for a in got if want[a][1] is not None)
    missed = [a for a in range(len(want)) if a not in got]
    # A drained reading within TWICE_US of another with the same value is
    # one sample the driver stamped differently on two reads.
    twice = [a for a in missed if any(
        b != a and 0 <= b < len(want) and abs(want[b][0] - want[a][0]) <= TWICE_US
        and want[b][1] is not None and want[b][1] == want[a][1] for b in (a - 1, a + 1))]
    n, m = len(want), len(got)
    print(f"{key} {drain['uuids'][i]}: drain saw {n} buffered readings within the raw span, "
          f"the run holds {m} ({100 * m / max(1, n):.2f} %), timestamps within {worst} µs; "
          f"raw samples the drain did not see: {len(raw) - m}")
    if valued:
        print(f"  values equal (to the raw file's mW) in {same} of {valued} matches")
    for a in missed:
        t, v = want[a]
        near = [(want[b][0] - t, want[b][1]) for b in (a - 1, a + 1) if 0 <= b < len(want)]
        print(f"  unmatched drain reading at {t} µs ({v} mW); its neighbours (Δµs, mW): {near}"
              + ("  <- the same sample read twice under two timestamps" if a in twice else ""))
    if twice:
        print(f"  counting each sample once: the run holds {m} of {n - len(twice)} "
              f"({100 * m / max(1, n - len(twice)):.2f} %)")

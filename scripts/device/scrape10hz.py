"""Scrapes a powerlab --metrics-listen endpoint at 10 Hz until the file named
by argv[3] exists; prints the scrape count, failures and latency quantiles,
and keeps the last good exposition in argv[2]."""
import sys, os, time, urllib.request

url, keep, stop = sys.argv[1], sys.argv[2], sys.argv[3]
lat, fails, last, t_next = [], 0, "", time.monotonic()
while not os.path.exists(stop):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            last = r.read().decode()
        lat.append((time.monotonic() - t0) * 1e3)
    except Exception as e:  # the run may not be listening yet, or has ended
        fails += 1
    t_next += 0.1
    time.sleep(max(0.0, t_next - time.monotonic()))
open(keep, "w").write(last)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
print(f"scraper: {len(lat)} scrapes at 10 Hz, {fails} failed (before the bind or after the end), latency p50 {q(.5):.2f} ms p99 {q(.99):.2f} ms max {max(lat) if lat else float('nan'):.2f} ms")

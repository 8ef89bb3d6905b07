#!/usr/bin/env python3
"""An independent power meter (its own code, not the harness's), from
pynvml alone. Every --interval s (0.2) and for every GPU (or --gpus):
  * drains the driver's buffered power samples, nvmlDeviceGetSamples(
    NVML_TOTAL_POWER_SAMPLES, last seen timestamp), keeping only samples
    stamped after the last one seen (driver timestamps: CPU realtime µs;
    values mW; the ring holds ~2.4 s, so a 0.2 s drain loses none);
  * reads the energy counter nvmlDeviceGetTotalEnergyConsumption (mJ), with
    time.time() at the middle of the read.
It stops when the --stop file exists, after --seconds, or on SIGTERM/SIGINT,
and then writes --out: .npz (numpy) or anything else as JSON, with the same
keys either way (g<k>_ is the k-th metered GPU):
  gpus, uuids, names, start_unix, end_unix, interval_s, polls,
  g<k>_ts_us, g<k>_value_mw                 buffered samples,
  g<k>_energy_t_s, g<k>_energy_mj           energy counter reads,
  g<k>_poll_t_s, g<k>_poll_newest_us        each poll's time and the newest
                                            sample stamp seen by then,
  g<k>_errors                               NVML errors other than "no new sample".

    usage: independent_meter.py --out PATH.npz [--stop PATH] [--seconds S]
                                [--gpus 0,1] [--interval 0.2]

Nothing here changes a GPU setting: it only reads.
"""
import argparse
import json
import os
import signal
import sys
import time

import numpy as np
import pynvml as N

STOP = False


def _on_signal(signum, frame):
    global STOP
    STOP = True


def sample_value(value_type, v):
    """The number held in an nvmlValue_t union, by its declared type."""
    field = {
        getattr(N, "NVML_VALUE_TYPE_DOUBLE", 0): "dVal",
        getattr(N, "NVML_VALUE_TYPE_UNSIGNED_INT", 1): "uiVal",
        getattr(N, "NVML_VALUE_TYPE_UNSIGNED_LONG", 2): "ulVal",
        getattr(N, "NVML_VALUE_TYPE_UNSIGNED_LONG_LONG", 3): "ullVal",
        getattr(N, "NVML_VALUE_TYPE_SIGNED_LONG_LONG", 4): "sllVal",
    }.get(value_type, "uiVal")
    return getattr(v, field)


class Gpu:
    def __init__(self, index):
        self.index = index
        self.h = N.nvmlDeviceGetHandleByIndex(index)
        self.uuid = N.nvmlDeviceGetUUID(self.h)
        self.name = N.nvmlDeviceGetName(self.h)
        if isinstance(self.uuid, bytes):
            self.uuid = self.uuid.decode()
        if isinstance(self.name, bytes):
            self.name = self.name.decode()
        self.last = 0
        self.ts, self.mw = [], []
        self.e_t, self.e_mj = [], []
        self.poll_t, self.poll_newest = [], []
        self.errors = 0

    def drain(self):
        try:
            vtype, samples = N.nvmlDeviceGetSamples(self.h, N.NVML_TOTAL_POWER_SAMPLES, self.last)
        except N.NVMLError_NotFound:  # no sample newer than self.last
            return
        except N.NVMLError:
            self.errors += 1
            return
        for s in sorted(samples, key=lambda s: s.timeStamp):
            if s.timeStamp > self.last:
                self.ts.append(int(s.timeStamp))
                self.mw.append(int(sample_value(vtype, s.sampleValue)))
                self.last = int(s.timeStamp)

    def read_energy(self):
        t0 = time.time()
        try:
            e = N.nvmlDeviceGetTotalEnergyConsumption(self.h)
        except N.NVMLError:
            self.errors += 1
            return
        self.e_t.append((t0 + time.time()) / 2)
        self.e_mj.append(int(e))

    def poll(self):
        self.drain()
        self.read_energy()
        self.poll_t.append(time.time())
        self.poll_newest.append(self.last)


def write(path, gpus, meta):
    out = dict(meta)
    out["gpus"] = [g.index for g in gpus]
    out["uuids"] = [g.uuid for g in gpus]
    out["names"] = [g.name for g in gpus]
    for k, g in enumerate(gpus):
        out[f"g{k}_ts_us"] = np.asarray(g.ts, dtype=np.int64)
        out[f"g{k}_value_mw"] = np.asarray(g.mw, dtype=np.int64)
        out[f"g{k}_energy_t_s"] = np.asarray(g.e_t, dtype=np.float64)
        out[f"g{k}_energy_mj"] = np.asarray(g.e_mj, dtype=np.int64)
        out[f"g{k}_poll_t_s"] = np.asarray(g.poll_t, dtype=np.float64)
        out[f"g{k}_poll_newest_us"] = np.asarray(g.poll_newest, dtype=np.int64)
        out[f"g{k}_errors"] = g.errors
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        if path.endswith(".npz"):
            np.savez(f, **{k: np.asarray(v) for k, v in out.items()})
        else:
            f.write(json.dumps({k: (v.tolist() if isinstance(v, np.ndarray) else v)
                                for k, v in out.items()}).encode())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help=".npz, or any other name for JSON")
    ap.add_argument("--stop", default=None, help="stop once this file exists")
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long")
    ap.add_argument("--gpus", default=None, help="comma-separated indices (default: all)")
    ap.add_argument("--interval", type=float, default=0.2, help="poll period, s")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    N.nvmlInit()
    try:
        idx = ([int(x) for x in a.gpus.split(",")] if a.gpus
               else list(range(N.nvmlDeviceGetCount())))
        gpus = [Gpu(i) for i in idx]
        print(f"[meter] {len(gpus)} GPU(s): " + ", ".join(f"{g.index} {g.name}" for g in gpus)
              + f"; every {a.interval} s -> {a.out}", flush=True)
        start = time.time()
        polls = 0
        stopped_by = "signal"
        while not STOP:
            if a.stop and os.path.exists(a.stop):
                stopped_by = "stop file"
                break
            if a.seconds is not None and time.time() - start >= a.seconds:
                stopped_by = "seconds"
                break
            tick = time.perf_counter()
            for g in gpus:
                g.poll()
            polls += 1
            left = a.interval - (time.perf_counter() - tick)
            if left > 0:
                time.sleep(left)  # a signal cuts this short by at most one interval
        end = time.time()
        write(a.out, gpus, {"format": "independent_meter/1", "start_unix": start, "end_unix": end,
                            "interval_s": a.interval, "polls": polls, "stopped_by": stopped_by})
        print(f"[meter] {polls} polls over {end - start:.1f} s ({stopped_by}); "
              + ", ".join(f"GPU {g.index}: {len(g.ts)} samples, {len(g.e_t)} energy reads, "
                          f"{g.errors} errors" for g in gpus), flush=True)
    finally:
        N.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

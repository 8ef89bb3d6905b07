#!/usr/bin/env python3
"""A grid study's COMTRADE recording read back by a third-party reader
(PyPI `comtrade`, https://github.com/dparrini/python-comtrade), checked
against the figures the writer states beside it in `comtrade.json`
(crates/predict/src/export/comtrade.rs).

usage: comtrade-check.py DIR

DIR holds one recording: `comtrade.json` and the `.cfg`/`.dat` it names
(or DIR is a prediction's folder whose `study/` holds them). Where
`lifecycle.json` lies beside them (a prediction's study), each channel's
mean and peak are also checked against the report's own figures
(`study.channels[i].mean_mw`, `peak_mw`) to 0.1 %.
Every `.cfg` in DIR must be the one `comtrade.json` names. Checked:
revision 2013, FLOAT32, the sample count, the sampling rate, the start
time, the channel names and units, the reader's time axis, and each
channel's mean, peak and minimum to 0.1 %. Prints every figure; exits 1 on
any miss, 2 on a missing file."""
import datetime as dt
import json
import pathlib
import sys

import comtrade
import numpy as np

TOLERANCE = 1e-3  # 0.1 %


def close(got, stated, scale):
    """Within 0.1 % of the stated figure (of `scale` where it is ~0)."""
    return abs(got - stated) <= TOLERANCE * max(abs(stated), abs(scale) * 1e-6, 1e-12)


def check_header(rec, stated, misses):
    """The .cfg's fields as the reader parsed them."""
    start = dt.datetime.fromisoformat(stated["start_utc"].replace("Z", "")).replace(tzinfo=None)
    rate = rec.cfg.sample_rates[0][0] if rec.cfg.sample_rates else float("nan")
    t = np.asarray(rec.time, dtype=np.float64)
    figures = [
        ("revision", rec.rev_year, stated["revision"]),
        ("format", rec.ft, stated["format"]),
        ("samples", rec.total_samples, stated["samples"]),
        ("rows read", len(t), stated["samples"]),
        ("rate_hz", rate, stated["rate_hz"]),
        ("start", rec.start_timestamp, start),
        ("trigger", rec.trigger_timestamp, start),
        ("channels", rec.analog_count, len(stated["channels"])),
        ("last time_s", float(t[-1]) if len(t) else float("nan"), stated["last_time_s"]),
    ]
    for name, got, want in figures:
        ok = close(got, want, want) if isinstance(want, float) else got == want
        print(f"  {name:12} reader {got!s:28} stated {want!s:28} {'ok' if ok else 'MISS'}")
        if not ok:
            misses.append(name)


def check_channels(rec, stated, misses):
    """Each channel's name, unit, mean, peak and minimum."""
    print(f"  {'channel':24} {'figure':6} {'reader':>16} {'stated':>16} {'off %':>10}")
    for i, ch in enumerate(stated["channels"][: rec.analog_count]):
        meta = rec.cfg.analog_channels[i]
        for label, ok in [("name", meta.name == ch["name"]), ("unit", meta.uu == stated["unit"])]:
            if not ok:
                misses.append(f"{ch['name']} {label}")
                print(f"  {ch['name']:24} {label}: reader {meta.name!r} {meta.uu!r} MISS")
        v = np.asarray(rec.analog[i], dtype=np.float64)
        got = {"mean": v.mean(), "peak": v.max(), "min": v.min()}
        for fig in ("mean", "peak", "min"):
            want = ch[f"{fig}_mw"]
            ok = close(got[fig], want, ch["peak_mw"])
            off = 100 * (got[fig] - want) / want if want else 0.0
            print(f"  {ch['name']:24} {fig:6} {got[fig]:16.6f} {want:16.6f} {off:10.2e} {'ok' if ok else 'MISS'}")
            if not ok:
                misses.append(f"{ch['name']} {fig}")


def check_report(rec, d, misses):
    """Each channel's mean and peak against the prediction's own figures."""
    path = d / "lifecycle.json"
    if not path.is_file():
        return
    channels = json.loads(path.read_text())["study"]["channels"]
    print(f"  against the report's figures ({path.name}):")
    for i, ch in enumerate(channels[: rec.analog_count]):
        v = np.asarray(rec.analog[i], dtype=np.float64)
        for fig, got in (("mean", v.mean()), ("peak", v.max())):
            want = ch[f"{fig}_mw"]
            ok = close(got, want, want)
            print(f"  {ch['label']:24} {fig:6} reader {got:16.6f} report {want:16.6f} "
                  f"{100 * (got - want) / want:10.2e} % {'ok' if ok else 'MISS'}")
            if not ok:
                misses.append(f"{ch['label']} {fig} vs report")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = pathlib.Path(sys.argv[1])
    if (d / "study" / "comtrade.json").is_file():
        d = d / "study"
    sidecar = d / "comtrade.json"
    if not sidecar.is_file():
        print(f"error: {sidecar} is missing", file=sys.stderr)
        return 2
    stated = json.loads(sidecar.read_text())
    cfg, dat = d / stated["cfg"], d / stated["dat"]
    others = sorted(p.name for p in d.glob("*.cfg") if p.name != stated["cfg"])
    if others or not cfg.is_file() or not dat.is_file():
        print(f"error: {d}: {cfg.name} and {dat.name} must exist and be the only recording; "
              f"other .cfg: {others}", file=sys.stderr)
        return 2
    rec = comtrade.Comtrade(use_numpy_arrays=True, use_double_precision=True)
    rec.load(str(cfg), str(dat))
    print(f"{cfg} (comtrade {getattr(comtrade, '__version__', '?')}):")
    misses = []
    check_header(rec, stated, misses)
    check_channels(rec, stated, misses)
    check_report(rec, d, misses)
    if misses:
        print(f"comtrade-check: {len(misses)} miss(es): {', '.join(misses)}", file=sys.stderr)
        return 1
    print(f"comtrade-check: ok ({rec.total_samples} rows x {rec.analog_count} channels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

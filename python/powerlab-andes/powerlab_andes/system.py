"""Build an ANDES system the way both `modes` and `play` need it.

One function, `build`, so that the linearised model and the playback
always see the same case: shipped disturbances off, loads held at
constant power, the facility added as a PQ load with a frequency
measurement (BusFreq) at its bus, power flow solved, TDS initialised.
"""

import logging
import os
from dataclasses import dataclass, field

import numpy as np

FACILITY_PQ = "POWERLAB_FACILITY"
FACILITY_FREQ = "POWERLAB_FACILITY_FREQ"

# Disturbance models that shipped cases carry and that must not fire
# during playback or linearisation.
DISTURBANCE_MODELS = ("Toggle", "Fault", "Alter")

# The case table: inter-area tie lines per known case (line idx as ANDES
# names them). Kundur: the three 7-8 lines that join area 1 (buses
# 1, 2, 5, 6, 7) to area 2 (3, 4, 8, 9, 10). IEEE 39: every line whose
# ends lie in the case's two declared areas.
TIES = {
    "kundur/kundur_full.xlsx": ("Line_4", "Line_5", "Line_6"),
    "ieee39/ieee39_full.xlsx": ("Line_8", "Line_18", "Line_21", "Line_32", "Line_33"),
}

# Simulator settings, chosen once here and written into play.json and the
# README. See README.md ("Settings and why").
SETTINGS = {
    "method": "trapezoid",
    "tol_pu": 1e-8,
    "pflow_tol_pu": 1e-11,
    "max_iter": 20,
    "load_model": "constant power",
    "busfreq_tf_s": 0.02,
    "busfreq_tw_s": 0.04,
    # Integration steps per row of a window (20 ms rows: 10 ms steps).
    "substeps": 2,
}


class CaseError(Exception):
    """A case, bus or line that cannot be used; the message says why."""


@dataclass
class Built:
    """A solved, TDS-initialised system and what the outputs need."""

    ss: object
    case: str
    bus: object
    p0_mw: float
    f0_hz: float
    s_base_mva: float
    disturbances_off: list = field(default_factory=list)
    tie_lines: list = field(default_factory=list)
    from_area_buses: list = field(default_factory=list)
    to_area_buses: list = field(default_factory=list)
    # per tie line: +1 to measure at bus1 (bus1 in the from area), -1 at bus2
    tie_ends: list = field(default_factory=list)


def quiet_andes():
    import andes

    andes.config_logger(stream_level=logging.ERROR)
    logging.getLogger("andes").setLevel(logging.ERROR)


def resolve_case(case):
    """A path under ANDES's own cases/ folder, or an existing file."""
    import andes

    if os.path.isfile(case):
        return os.path.abspath(case)
    path = andes.get_case(case, check=False)
    if not os.path.isfile(path):
        raise CaseError(
            f"case {case!r} is neither a file nor a case shipped with ANDES "
            f"{andes.__version__} (looked at {path}); name one under andes/cases/, "
            "e.g. kundur/kundur_full.xlsx"
        )
    return path


def parse_bus(text):
    """Bus idx as ANDES keys it: an int where the text is one."""
    try:
        return int(text)
    except ValueError:
        return text


def _tie_lines(case, tie):
    if tie:
        return [t.strip() for t in tie.split(",") if t.strip()]
    key = case.replace(os.sep, "/")
    for name, lines in TIES.items():
        if key == name or key.endswith("/cases/" + name):
            return list(lines)
    return []


def _switch_off_disturbances(ss):
    off = []
    for name in DISTURBANCE_MODELS:
        model = ss.models.get(name)
        if model is None or model.n == 0:
            continue
        for i, idx in enumerate(model.idx.v):
            if model.u.v[i] != 0:
                model.u.v[i] = 0
                off.append(f"{name}_{idx}")
    return off


def _check_bus(ss, bus):
    if bus not in ss.Bus.idx.v:
        shown = ", ".join(str(b) for b in ss.Bus.idx.v[:50])
        raise CaseError(f"bus {bus!r} is not in the case; its buses are: {shown}")


def _tie_geometry(built, lines):
    ss = built.ss
    areas = dict(zip(ss.Bus.idx.v, ss.Bus.area.v))
    if not lines:
        return
    known = set(ss.Line.idx.v)
    missing = [ln for ln in lines if ln not in known]
    if missing:
        raise CaseError(
            f"tie line(s) {missing} are not in the case; pass existing Line idx with --tie"
        )
    first = ss.Line.idx2uid(lines[0])
    from_area = areas[ss.Line.bus1.v[first]]
    frm, to, ends = [], [], []
    for ln in lines:
        uid = ss.Line.idx2uid(ln)
        b1, b2 = ss.Line.bus1.v[uid], ss.Line.bus2.v[uid]
        if areas[b1] == from_area:
            ends.append(1)
            frm.append(b1)
            to.append(b2)
        else:
            ends.append(-1)
            frm.append(b2)
            to.append(b1)
    built.tie_lines = list(lines)
    built.tie_ends = ends
    built.from_area_buses = sorted(set(frm), key=str)
    built.to_area_buses = sorted(set(to), key=str)


def build(case, bus, p0_mw, tie=None, tstep_s=0.02):
    """Load CASE, add the facility at BUS drawing P0_MW, solve and init TDS."""
    import andes

    quiet_andes()
    path = resolve_case(case)
    ss = andes.load(path, setup=False, no_output=True, default_config=True)
    _check_bus(ss, bus)
    # Constant power for every PQ load during TDS (ANDES converts them to
    # constant impedance by default, which would turn playback of power
    # into playback of admittance).
    ss.PQ.config.p2p = 1.0
    ss.PQ.config.p2i = 0.0
    ss.PQ.config.p2z = 0.0
    ss.PQ.config.q2q = 1.0
    ss.PQ.config.q2i = 0.0
    ss.PQ.config.q2z = 0.0
    # Nor switch to impedance in the power flow at low/high voltage.
    ss.PQ.config.pq2z = 0
    off = _switch_off_disturbances(ss)
    s_base = float(ss.config.mva)
    f0 = float(ss.config.freq)
    vn = ss.Bus.Vn.v[ss.Bus.idx.v.index(bus)]
    ss.add(
        "PQ",
        dict(idx=FACILITY_PQ, name="facility", bus=bus, Vn=vn, p0=p0_mw / s_base, q0=0.0),
    )
    ss.add(
        "BusFreq",
        dict(
            idx=FACILITY_FREQ,
            name="facility_freq",
            bus=bus,
            Tf=SETTINGS["busfreq_tf_s"],
            Tw=SETTINGS["busfreq_tw_s"],
            fn=f0,
        ),
    )
    if not ss.setup():
        raise CaseError(f"ANDES could not set up case {case!r}; run `andes run {path}` to see why")
    # A power flow solved far tighter than the TDS tolerance, so that the
    # initial point is an equilibrium of the dynamic model to ~1e-13 p.u.
    # and nothing drifts before the first input step.
    ss.PFlow.config.tol = SETTINGS["pflow_tol_pu"]
    if not ss.PFlow.run() or not ss.PFlow.converged:
        raise CaseError(
            f"the power flow of {case!r} with {p0_mw} MW at bus {bus} did not converge; "
            "try a smaller facility power or another bus"
        )
    cfg = ss.TDS.config
    cfg.method = SETTINGS["method"]
    cfg.tol = SETTINGS["tol_pu"]
    cfg.max_iter = SETTINGS["max_iter"]
    cfg.tstep = tstep_s
    cfg.fixt = 1
    cfg.shrinkt = 1
    cfg.tf = 0.0
    cfg.no_tqdm = 1
    ss.TDS.init()
    if not ss.TDS.initialized:
        raise CaseError(f"ANDES could not initialise the time-domain simulation of {case!r}")
    built = Built(
        ss=ss,
        case=case,
        bus=bus,
        p0_mw=float(p0_mw),
        f0_hz=f0,
        s_base_mva=s_base,
        disturbances_off=off,
    )
    _tie_geometry(built, _tie_lines(case, tie))
    return built


def machines(ss):
    """Every synchronous machine: name, bus, H (s, own base), S (MVA), omega addresses."""
    out = []
    for model in ss.SynGen.models.values():
        for i in range(model.n):
            if model.u.v[i] == 0:
                continue
            # M.vin: the input (machine-base) value; M.v is on the system base.
            out.append(
                {
                    "name": str(model.name.v[i]),
                    "bus": model.bus.v[i],
                    "h_s": float(model.M.vin[i]) / 2.0,
                    "s_mva": float(model.Sn.v[i]),
                    "omega_addr": int(model.omega.a[i]),
                }
            )
    return out


def line_flows_pu(ss, lines, ends, y):
    """Active power into each tie line at its from-area end, p.u. on the system base.

    The same expressions as ANDES's Line equations (a1 / a2), evaluated on
    the algebraic vector `y` so the linearisation can differentiate them.
    """
    out = []
    for ln, end in zip(lines, ends):
        uid = ss.Line.idx2uid(ln)
        m = ss.Line
        a1, a2 = y[m.a1.a[uid]], y[m.a2.a[uid]]
        v1, v2 = y[m.v1.a[uid]], y[m.v2.a[uid]]
        ue = m.ue.v[uid] if hasattr(m, "ue") else m.u.v[uid]
        gh, ghk, bhk = m.gh.v[uid], m.ghk.v[uid], m.bhk.v[uid]
        itap, itap2, phi = m.itap.v[uid], m.itap2.v[uid], m.phi.v[uid]
        d = a1 - a2 - phi
        if end > 0:
            p = v1**2 * (gh + ghk) * itap2 - v1 * v2 * (ghk * np.cos(d) + bhk * np.sin(d)) * itap
        else:
            p = v2**2 * (gh + ghk) - v1 * v2 * (ghk * np.cos(d) - bhk * np.sin(d)) * itap
        out.append(ue * p)
    return np.array(out)


def outputs_now(built, machs, sum_hs):
    """(f_bus_hz, f_coi_hz, p_tie_mw or None) at the system's present state."""
    ss = built.ss
    dae = ss.dae
    f_bus = built.f0_hz * float(dae.y[ss.BusFreq.f.a[ss.BusFreq.idx2uid(FACILITY_FREQ)]])
    w = sum(m["h_s"] * m["s_mva"] * dae.x[m["omega_addr"]] for m in machs)
    f_coi = built.f0_hz * float(w) / sum_hs
    if built.tie_lines:
        p = line_flows_pu(ss, built.tie_lines, built.tie_ends, dae.y)
        p_tie = float(p.sum()) * built.s_base_mva
    else:
        p_tie = None
    return f_bus, f_coi, p_tie

"""The linearised model: modes and residues from the facility's load to the outputs.

ANDES writes its model as T x' = f(x, y, u), 0 = g(x, y, u). At the
initialised operating point this module takes ANDES's own Jacobians
(fx, fy, gx, gy: the ones its EIG routine reduces) and keeps the model
in descriptor form, z = [x; y]:

    E z' = A z + B u,   y_out = C z,   E = diag(T, 0),  A = [[fx, fy], [gx, gy]]

The input u is the facility load's P (MW, positive = more consumption),
which enters only its bus's active-power balance; B = ∂[f; g]/∂u is taken
by differencing ANDES's own equations in the load's `Ppf`, so the sign
and per-unit base are ANDES's (this is −f_y g_y⁻¹ ∂g/∂P once the
algebraic variables are eliminated). The outputs are

    f_bus_hz  the BusFreq device at the facility bus (its filtered
              angle derivative: what a measurement there reports),
    f_coi_hz  f0 · Σ H_i S_i ω_i / Σ H_i S_i over the case's machines,
    p_tie_mw  Σ active power into the tie lines at their from-area ends,

each as a deviation. The finite generalised eigenvalues λ of (A, E) are
the modes, and H_k(s) = D_k + Σ_i R_ki / (s − λ_i) (see `modal`), checked
against a direct solve of C (sE − A)⁻¹ B before anything is written.
"""

import json

import numpy as np
from scipy.linalg import eig
from scipy.signal import lfilter

from . import system as S

OUTPUTS = ["f_bus_hz", "f_coi_hz", "p_tie_mw"]
# A mode is real when its imaginary part is below this share of |λ|.
REAL_TOL = 1e-9
# Residues below this share of the largest (per output) are dropped.
DROP_SHARE = 1e-6
# |λ| below this (rad/s) is the angle-reference mode: a uniform shift of
# every angle, which no output here sees (frequencies, angle differences).
ZERO_MODE_RAD_S = 1e-7
# Generalised eigenvalues beyond this (rad/s) are the pencil's infinite ones.
FINITE_RAD_S = 1e7


class LinearError(Exception):
    """The linearisation cannot be formed; the message says why."""


def _dense(mat):
    from kvxopt import matrix

    return np.array(matrix(mat), dtype=float)


def _evaluate(ss):
    """f and g at the present state, from ANDES's own equations."""
    ss.vars_to_models()
    ss.TDS.fg_update(ss.exist.tds)
    return np.concatenate([np.array(ss.dae.f, dtype=float), np.array(ss.dae.g, dtype=float)])


def _jacobian(ss):
    _evaluate(ss)
    ss.j_update(models=ss.exist.tds)
    dae = ss.dae
    fx, fy = _dense(dae.fx), _dense(dae.fy)
    gx, gy = _dense(dae.gx), _dense(dae.gy)
    return np.block([[fx, fy], [gx, gy]])


def _input_column(built):
    """∂[f; g]/∂P for the facility's P in MW (central difference; exact: P enters linearly)."""
    ss = built.ss
    uid = ss.PQ.idx2uid(S.FACILITY_PQ)
    base = float(ss.PQ.Ppf.v[uid])
    eps_pu = 1e-4
    ss.PQ.Ppf.v[uid] = base + eps_pu
    hi = _evaluate(ss)
    ss.PQ.Ppf.v[uid] = base - eps_pu
    lo = _evaluate(ss)
    ss.PQ.Ppf.v[uid] = base
    _evaluate(ss)
    return (hi - lo) / (2 * eps_pu) / built.s_base_mva


def _output_rows(built, machs, sum_hs):
    ss = built.ss
    n, m = ss.dae.n, ss.dae.m
    rows = np.zeros((3, n + m))
    f_addr = ss.BusFreq.f.a[ss.BusFreq.idx2uid(S.FACILITY_FREQ)]
    rows[0, n + f_addr] = built.f0_hz
    for mach in machs:
        rows[1, mach["omega_addr"]] += built.f0_hz * mach["h_s"] * mach["s_mva"] / sum_hs
    if built.tie_lines:
        y0 = np.array(ss.dae.y, dtype=float)
        eps = 1e-6
        addrs = set()
        for ln in built.tie_lines:
            uid = ss.Line.idx2uid(ln)
            for var in (ss.Line.a1, ss.Line.a2, ss.Line.v1, ss.Line.v2):
                addrs.add(int(var.a[uid]))
        for a in sorted(addrs):
            yp, ym = y0.copy(), y0.copy()
            yp[a] += eps
            ym[a] -= eps
            hi = S.line_flows_pu(ss, built.tie_lines, built.tie_ends, yp).sum()
            lo = S.line_flows_pu(ss, built.tie_lines, built.tie_ends, ym).sum()
            rows[2, n + a] = (hi - lo) / (2 * eps) * built.s_base_mva
    return rows


def pencil(built, machs, sum_hs):
    """(E, A, B, C) of the descriptor model E z' = A z + B u, y = C z, z = [x; y]."""
    ss = built.ss
    n, m = ss.dae.n, ss.dae.m
    a_full = _jacobian(ss)
    b_full = _input_column(built)
    c_full = _output_rows(built, machs, sum_hs)
    e_full = np.zeros(n + m)
    e_full[:n] = np.array(ss.dae.Tf, dtype=float)
    return np.diag(e_full), a_full, b_full, c_full


def transfer(e, a, b, c, s):
    """H(s) = C (sE - A)^-1 B by a direct solve (the reference the modal sum must meet)."""
    return c @ np.linalg.solve(s * e - a, b.astype(complex))


def modal(e, a, b, c):
    """Finite eigenvalues λ, residues R[k, i], right eigenvectors and the direct term D.

    Solves the generalised problem A v = λ E v (and w^H A = λ w^H E), which
    keeps states with a zero time constant and constraints on states
    (filters with zero time constants, as IEEE 39's PSS has) as they are,
    instead of eliminating them first. For a simple finite λ the residue is
    R = (C v)(w^H B) / (w^H E v). D is what is left of H at s0 once every
    finite mode is taken off, checked to be the same at a second s0.
    """
    lam, vl, vr = eig(a, e, left=True, right=True)
    finite = np.isfinite(lam) & (np.abs(lam) < FINITE_RAD_S)
    lam, vl, vr = lam[finite], vl[:, finite], vr[:, finite]
    norm = np.einsum("ij,ij->j", vl.conj(), e @ vr)
    res = (c @ vr) * ((vl.conj().T @ b) / norm)[None, :]
    d = []
    for s0 in (1j * 2 * np.pi * 0.37, 1j * 2 * np.pi * 3.1):
        rest = transfer(e, a, b, c, s0) - (res / (s0 - lam)[None, :]).sum(axis=1)
        d.append(rest)
    scale = np.abs(transfer(e, a, b, c, 1j * 2 * np.pi * 0.37)) + 1e-12
    if np.any(np.abs(d[0] - d[1]) > 1e-6 * scale + 1e-12):
        raise LinearError(
            "the modal sum does not reproduce the model's transfer function "
            f"(direct terms {np.real(d[0])} and {np.real(d[1])} at two frequencies): the case "
            "has repeated or defective modes; report the case and bus"
        )
    return lam, res, vr, np.real(d[0])


def check_modal(e, a, b, c, lam, res, direct):
    """Largest relative error of the modal sum against the direct solve, 0.01-30 Hz."""
    worst = 0.0
    for f_hz in (0.01, 0.1, 0.3, 0.6, 1.0, 2.0, 5.0, 12.0, 30.0):
        s = 1j * 2 * np.pi * f_hz
        h = transfer(e, a, b, c, s)
        hm = direct + (res / (s - lam)[None, :]).sum(axis=1)
        worst = max(worst, float(np.max(np.abs(hm - h) / (np.abs(h) + 1e-12))))
    return worst


def participation(lam, vec, angle_addr, omega_addrs, f0_hz):
    """bus_participation of each mode (see `modes_json`)."""
    omega0 = 2 * np.pi * f0_hz
    out = []
    for i, l in enumerate(lam):
        bus_f = abs(l * vec[angle_addr, i]) / omega0
        mach = max((abs(vec[k, i]) for k in omega_addrs), default=0.0)
        if mach <= 0 or not np.isfinite(bus_f):
            out.append(0.0)
        else:
            out.append(float(min(1.0, bus_f / mach)))
    return out


def _mode_entry(lam_i, res_i, part_i):
    re, im = float(lam_i.real), float(lam_i.imag)
    wn = abs(lam_i)
    return {
        "re": re,
        "im": im,
        "freq_hz": im / (2 * np.pi),
        "damping_ratio": float(-re / wn) if wn > 0 else 1.0,
        "bus_participation": part_i,
        "residues": [[float(r.real) + 0.0, float(r.imag) + 0.0] for r in res_i],
    }


def select_modes(lam, res, part):
    """Pairs once (im > 0), real modes alone, residues that matter only."""
    scale = np.abs(lam) + 1e-30
    real = np.abs(lam.imag) <= REAL_TOL * scale
    keep = []
    biggest_all = np.abs(res).max(axis=1) + 1e-300
    for i, l in enumerate(lam):
        if abs(l) < ZERO_MODE_RAD_S:
            if np.any(np.abs(res[:, i]) > 1e-9 * biggest_all):
                raise LinearError(
                    f"a mode at λ = {l:.3g} rad/s (an integrator) reaches the outputs; "
                    "the case's linearisation has no steady state for them"
                )
            continue
        if real[i]:
            keep.append((i, complex(l.real, 0.0), res[:, i].real.astype(complex)))
        elif l.imag > 0:
            keep.append((i, l, res[:, i]))
    biggest = np.zeros(res.shape[0])
    for _, _, r in keep:
        biggest = np.maximum(biggest, np.abs(r))
    out = []
    for i, l, r in keep:
        matters = np.abs(r) >= DROP_SHARE * biggest
        if np.any(matters & (biggest > 0)):
            out.append(_mode_entry(l, r, part[i]))
    out.sort(key=lambda m: (m["freq_hz"], m["re"]))
    return out


def inter_area(modes, tie):
    """Index of the inter-area mode: 0.1-1 Hz, largest tie-flow (else COI) residue."""
    k = 2 if tie else 1
    best, best_v = None, -1.0
    for i, m in enumerate(modes):
        if not 0.1 <= m["freq_hz"] <= 1.0:
            continue
        r = m["residues"][k]
        v = abs(complex(r[0], r[1])) / max(abs(m["re"]), 1e-9)
        if v > best_v:
            best, best_v = i, v
    return best


def _clean_direct(d_s, modes):
    """D as floats, with round-off (below 1e-9 of the output's largest residue) set to 0."""
    out = []
    for k, v in enumerate(d_s):
        big = max((abs(complex(*m["residues"][k])) for m in modes), default=0.0)
        out.append(0.0 if abs(v) < 1e-9 * big else float(v))
    return out


def initial_slope(modes):
    """Each output's slope just after a 1 MW step (per s): Σ R over the modes.

    For f_coi this is the swing equation's RoCoF, f0 ΔPe / (2 Σ H S), with
    ΔPe what the machines pick up at once per MW of load: 1 plus the
    marginal losses (`machine_pickup_per_mw`).
    """
    out = []
    for k in range(len(OUTPUTS)):
        total = 0.0
        for m in modes:
            r = complex(*m["residues"][k])
            total += 2 * r.real if m["im"] > 0 else r.real
        out.append(total)
    return out


def modes_json(built, andes_version):
    """Everything `modes` writes.

    bus_participation: how far the facility bus swings in the mode, as the
    magnitude of the bus's frequency in the mode's right eigenvector
    (|λ · θ_bus| / ω0, from the unfiltered bus angle) over the largest
    machine-speed magnitude in the same eigenvector, capped at 1. It is
    near 1 where the bus swings with the most-swinging machine, near 0 at
    a node of the mode; for modes in which no machine swings (controls,
    filters) it says little and is capped.
    """
    ss = built.ss
    machs = S.machines(ss)
    sum_hs = sum(m["h_s"] * m["s_mva"] for m in machs)
    e, a, b, c = pencil(built, machs, sum_hs)
    lam, res, vec, d_s = modal(e, a, b, c)
    n = ss.dae.n
    angle = n + int(ss.Bus.a.a[ss.Bus.idx2uid(built.bus)])
    part = participation(lam, vec, angle, [m["omega_addr"] for m in machs], built.f0_hz)
    worst = check_modal(e, a, b, c, lam, res, d_s)
    if worst > 1e-6:
        raise LinearError(
            f"the modal sum misses the direct solve of H by {worst:.2g} (relative): "
            "the case has nearly defective modes; report the case and bus"
        )
    modes = select_modes(lam, res, part)
    if built.tie_lines:
        y = np.array(ss.dae.y, dtype=float)
        p_tie = float(S.line_flows_pu(ss, built.tie_lines, built.tie_ends, y).sum())
        tie = {
            "lines": built.tie_lines,
            "from_area_buses": built.from_area_buses,
            "to_area_buses": built.to_area_buses,
            "p0_mw": p_tie * built.s_base_mva,
        }
    else:
        tie = None
        d_s = d_s.copy()
        d_s[2] = 0.0
        for m in modes:
            m["residues"][2] = [0.0, 0.0]
    return {
        "tool": "andes",
        "andes_version": andes_version,
        "case": built.case,
        "bus": built.bus,
        "f0_hz": built.f0_hz,
        "s_base_mva": built.s_base_mva,
        "p0_mw": built.p0_mw,
        "machines": [{k: m[k] for k in ("name", "bus", "h_s", "s_mva")} for m in machs],
        "sum_hs_mws": sum_hs,
        "tie": tie,
        "outputs": list(OUTPUTS),
        "modes": modes,
        "direct": _clean_direct(d_s, modes),
        "inter_area_mode": inter_area(modes, tie),
        "initial_slope_per_mw": initial_slope(modes),
        "machine_pickup_per_mw": -initial_slope(modes)[1] * 2 * sum_hs / built.f0_hz,
        "modal_check_rel_err": worst,
        "disturbances_off": built.disturbances_off,
        "settings": dict(S.SETTINGS),
    }


def respond(model, p_mw, step_s):
    """Deviation of each output for the power samples p_mw (first-order hold).

    The exact discretisation of H (from a modes.json dict) for a power that
    goes linearly from one sample to the next, from rest at p_mw[0]:
    z+ = e^{λh} z + Γ0 u_k + Γ1 (u_k+1 - u_k), y = Re Σ c R z + D u,
    c = 2 for a listed pair (its conjugate) and 1 for a real mode.
    Returns an array (outputs x samples).
    """
    u = np.asarray(p_mw, dtype=float) - float(p_mw[0])
    h = float(step_s)
    out = np.outer(np.asarray(model["direct"], dtype=float), u)
    for m in model["modes"]:
        lam = complex(m["re"], m["im"])
        res = np.array([complex(r[0], r[1]) for r in m["residues"]])
        weight = 2.0 if m["im"] > 0 else 1.0
        ad = np.exp(lam * h)
        g0 = (ad - 1) / lam
        g1 = (ad - 1 - lam * h) / (lam * lam * h)
        # z[k+1] = ad z[k] + g1 u[k+1] + (g0 - g1) u[k], from z[0] = 0 (u[0] = 0)
        z = lfilter([g1, g0 - g1], [1.0, -ad], u.astype(complex))
        out += weight * np.real(np.outer(res, z))
    return out


def dumps(model):
    """modes.json text: one line per machine and per mode, so diffs stay readable."""
    lines = ["{"]
    items = list(model.items())
    for n, (key, value) in enumerate(items):
        comma = "," if n + 1 < len(items) else ""
        if key in ("machines", "modes") and value:
            lines.append(f" {json.dumps(key)}: [")
            for k, item in enumerate(value):
                tail = "," if k + 1 < len(value) else ""
                lines.append(f"  {json.dumps(item)}{tail}")
            lines.append(f" ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"

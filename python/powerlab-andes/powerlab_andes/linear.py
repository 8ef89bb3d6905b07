"""The linearised model: modes and residues from the facility's load to the outputs.

ANDES writes its model as T x' = f(x, y, u), 0 = g(x, y, u). At the
initialised operating point this module takes ANDES's own Jacobians
(fx, fy, gx, gy: the same ones its EIG routine reduces), folds states
with a zero time constant in with the algebraic variables, and eliminates
them:

    As = T^-1 (A_dd - A_da A_aa^-1 A_ad)
    Bs = T^-1 (B_d  - A_da A_aa^-1 B_a)
    Cs = C_d - C_a A_aa^-1 A_ad,      D = -C_a A_aa^-1 B_a

The input u is the facility load's P (MW, positive = more consumption),
which enters only its bus's active-power balance; ∂[f; g]/∂u is taken
by differencing ANDES's own equations in the load's `Ppf`, so the sign
and per-unit base are ANDES's. The outputs are

    f_bus_hz  the BusFreq device at the facility bus (its filtered
              angle derivative: what a measurement there reports),
    f_coi_hz  f0 · Σ H_i S_i ω_i / Σ H_i S_i over the case's machines,
    p_tie_mw  Σ active power into the tie lines at their from-area ends,

each as a deviation. With As = V Λ V^-1 the transfer function is
H_k(s) = D_k + Σ_i R_ki / (s - λ_i), R_ki = (Cs V)_ki (V^-1 Bs)_i.
"""

import numpy as np

from . import system as S

OUTPUTS = ["f_bus_hz", "f_coi_hz", "p_tie_mw"]
# A mode is real when its imaginary part is below this share of |λ|.
REAL_TOL = 1e-9
# Residues below this share of the largest (per output) are dropped.
DROP_SHARE = 1e-6
# |λ| below this (rad/s) is the angle-reference mode: a uniform shift of
# every angle, which no output here sees (frequencies, angle differences).
ZERO_MODE_RAD_S = 1e-7


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


def reduce(built, machs, sum_hs):
    """(As, Bs, Cs, D, reduce_row) of the state-space model from P (MW) to the outputs.

    reduce_row maps a row over [x; y] to the same output over the kept states.
    """
    ss = built.ss
    n = ss.dae.n
    a_full = _jacobian(ss)
    b_full = _input_column(built)
    c_full = _output_rows(built, machs, sum_hs)
    tf = np.array(ss.dae.Tf, dtype=float)
    dyn = np.where(tf != 0)[0]
    alg = np.concatenate([np.where(tf == 0)[0], n + np.arange(ss.dae.m)])
    a_dd = a_full[np.ix_(dyn, dyn)]
    a_da = a_full[np.ix_(dyn, alg)]
    a_ad = a_full[np.ix_(alg, dyn)]
    a_aa = a_full[np.ix_(alg, alg)]
    cond = np.linalg.cond(a_aa)
    if not np.isfinite(cond) or cond > 1e14:
        raise LinearError(
            f"the algebraic Jacobian is singular (condition {cond:.3g}); the case has "
            "variables the linearisation cannot eliminate: try `andes run CASE -r eig` to see "
            "whether ANDES's own eigenanalysis reports dead algebraic variables"
        )
    x_ad = np.linalg.solve(a_aa, a_ad)
    x_ab = np.linalg.solve(a_aa, b_full[alg])
    inv_t = 1.0 / tf[dyn]
    a_s = inv_t[:, None] * (a_dd - a_da @ x_ad)
    b_s = inv_t * (b_full[dyn] - a_da @ x_ab)
    c_s = c_full[:, dyn] - c_full[:, alg] @ x_ad
    d_s = -c_full[:, alg] @ x_ab

    def reduce_row(row):
        return row[dyn] - row[alg] @ x_ad

    return a_s, b_s, c_s, d_s, reduce_row


def modal(a_s, b_s, c_s):
    """Eigenvalues, residues R[k, i] and right eigenvectors of the reduced model."""
    lam, vec = np.linalg.eig(a_s)
    w = np.linalg.solve(vec, b_s)
    res = (c_s @ vec) * w[None, :]
    return lam, res, vec


def participation(lam, vec, c_bus_angle, omega_rows, f0_hz):
    """bus_participation of each mode (see `modes_json`)."""
    omega0 = 2 * np.pi * f0_hz
    out = []
    for i, l in enumerate(lam):
        bus_f = abs(l * (c_bus_angle @ vec[:, i])) / omega0
        mach = max((abs(r @ vec[:, i]) for r in omega_rows), default=0.0)
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
        "residues": [[float(r.real), float(r.imag)] for r in res_i],
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
    a_s, b_s, c_s, d_s, reduce_row = reduce(built, machs, sum_hs)
    lam, res, vec = modal(a_s, b_s, c_s)
    n = ss.dae.n
    row = np.zeros(n + ss.dae.m)
    row[n + ss.Bus.a.a[ss.Bus.idx2uid(built.bus)]] = 1.0
    angle = reduce_row(row)
    omegas = []
    for mach in machs:
        r = np.zeros(n + ss.dae.m)
        r[mach["omega_addr"]] = 1.0
        omegas.append(reduce_row(r))
    part = participation(lam, vec, angle, omegas, built.f0_hz)
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
        "direct": [float(v) for v in d_s],
        "inter_area_mode": inter_area(modes, tie),
        "disturbances_off": built.disturbances_off,
        "settings": dict(S.SETTINGS),
    }

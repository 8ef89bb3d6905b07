//! The modal model of a power system seen from the facility's bus: the
//! output of `python -m powerlab_andes modes` (the simulator's own
//! eigenanalysis, linearised at the facility's load), read as it is
//! written, its transfer functions H_k(s) from the facility's load ΔP
//! (MW, positive: more consumption) to each output's deviation (Hz for the
//! two frequencies, MW for the tie flow), and a linear time-domain
//! playback of a load series through them.
//!
//! H_k(s) = direct[k] + Σ_modes [R/(s − λ) + conj(R)/(s − conj(λ))],
//! λ = re + j·im rad/s; a real mode (im = 0) contributes R/(s − λ) alone.

use powerlab_analysis::fft::Complex;
use serde::{Deserialize, Serialize};

/// The three outputs, in the model's order.
pub const OUTPUTS: [&str; 3] = ["f_bus_hz", "f_coi_hz", "p_tie_mw"];
/// The bus frequency's index.
pub const F_BUS: usize = 0;
/// The centre of inertia's frequency's index.
pub const F_COI: usize = 1;
/// The tie flow's index.
pub const P_TIE: usize = 2;

/// One machine of the case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Its name in the case.
    pub name: String,
    /// Its bus.
    pub bus: u32,
    /// Its inertia constant H, s.
    pub h_s: f64,
    /// Its rating, MVA.
    pub s_mva: f64,
}

/// The inter-area tie as the model states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tie {
    /// The case's lines that form it.
    pub lines: Vec<String>,
    /// The sending area's buses.
    pub from_area_buses: Vec<u32>,
    /// The receiving area's buses.
    pub to_area_buses: Vec<u32>,
    /// Its flow at the operating point, MW.
    pub p0_mw: f64,
}

/// One mode (a complex pair listed once, im > 0; or a real mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mode {
    /// Re λ, 1/s.
    pub re: f64,
    /// Im λ, rad/s.
    pub im: f64,
    /// im / 2π, Hz.
    pub freq_hz: f64,
    /// −re / |λ|.
    pub damping_ratio: f64,
    /// How strongly the facility's bus takes part, 0..1.
    pub bus_participation: f64,
    /// Per output, the residue [re, im].
    pub residues: Vec<[f64; 2]>,
}

/// A modal model as `powerlab_andes modes` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModalModel {
    /// The simulator.
    pub tool: String,
    /// Its version.
    #[serde(default)]
    pub andes_version: String,
    /// The case.
    pub case: String,
    /// The facility's bus.
    pub bus: u32,
    /// The nominal frequency, Hz.
    pub f0_hz: f64,
    /// The system base, MVA.
    pub s_base_mva: f64,
    /// The facility's load the model is linearised at, MW.
    pub p0_mw: f64,
    /// The case's machines.
    pub machines: Vec<Machine>,
    /// Σ H·S over the machines, MW·s.
    pub sum_hs_mws: f64,
    /// The inter-area tie (None: the case declares none).
    pub tie: Option<Tie>,
    /// The outputs' names, in order.
    pub outputs: Vec<String>,
    /// The modes.
    pub modes: Vec<Mode>,
    /// Per output, the direct term.
    pub direct: Vec<f64>,
}

/// Why a modal model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Not the JSON `modes` writes.
    #[error(
        "the modal model is not what `python -m powerlab_andes modes` writes ({0}); regenerate it with that command"
    )]
    Json(#[from] serde_json::Error),
    /// A field out of shape.
    #[error(
        "the modal model is inconsistent: {0}; regenerate it with `python -m powerlab_andes modes`"
    )]
    Shape(String),
}

/// The committed modal models (`grids/models/`): (case, bus, path, JSON).
pub use powerlab_rundir::files::predict::GRID_MODELS as COMMITTED;

/// The committed model of `case` at `bus` and the file it came from.
///
/// # Errors
///
/// [`ModelError`] when the committed file does not parse (a bug).
pub fn committed(case: &str, bus: u32) -> Result<Option<(ModalModel, &'static str)>, ModelError> {
    COMMITTED
        .iter()
        .find(|(c, b, _, _)| *c == case && *b == bus)
        .map(|(_, _, path, text)| ModalModel::parse(text).map(|m| (m, *path)))
        .transpose()
}

impl ModalModel {
    /// Reads and checks `text`: three outputs, a residue per output per
    /// mode, finite numbers, stable modes.
    ///
    /// # Errors
    ///
    /// [`ModelError`] where it is not a modal model.
    pub fn parse(text: &str) -> Result<ModalModel, ModelError> {
        let m: ModalModel = serde_json::from_str(text)?;
        let shape = |s: String| Err(ModelError::Shape(s));
        if m.outputs.len() != OUTPUTS.len() || m.direct.len() != OUTPUTS.len() {
            return shape(format!(
                "{} outputs and {} direct terms where {} belong ({})",
                m.outputs.len(),
                m.direct.len(),
                OUTPUTS.len(),
                OUTPUTS.join(", ")
            ));
        }
        if !(m.f0_hz > 0.0 && m.sum_hs_mws > 0.0) {
            return shape(format!(
                "f0_hz = {} and sum_hs_mws = {} must be above 0",
                m.f0_hz, m.sum_hs_mws
            ));
        }
        for (i, x) in m.modes.iter().enumerate() {
            let finite = [x.re, x.im].iter().all(|v| v.is_finite())
                && x.residues.iter().flatten().all(|v| v.is_finite());
            if x.residues.len() != OUTPUTS.len() || !finite || x.re >= 0.0 || x.im < 0.0 {
                return shape(format!(
                    "mode {i} (λ = {} + {}j) is unstable, has im < 0, a non-finite number, or {} residues where {} belong",
                    x.re,
                    x.im,
                    x.residues.len(),
                    OUTPUTS.len()
                ));
            }
        }
        Ok(m)
    }

    /// Whether the model has a tie flow.
    pub fn has_tie(&self) -> bool {
        self.tie.is_some()
    }

    /// H_k(jω) at `hz`: output k's deviation per MW of load.
    pub fn h(&self, k: usize, hz: f64) -> Complex<f64> {
        let s = Complex::new(0.0, 2.0 * std::f64::consts::PI * hz);
        let mut out = Complex::new(self.direct.get(k).copied().unwrap_or(0.0), 0.0);
        for m in &self.modes {
            let [rr, ri] = m.residues.get(k).copied().unwrap_or([0.0, 0.0]);
            let r = Complex::new(rr, ri);
            let l = Complex::new(m.re, m.im);
            out += r / (s - l);
            if m.im > 0.0 {
                out += r.conj() / (s - l.conj());
            }
        }
        out
    }

    /// The swing equation's RoCoF of a load step of `step_mw`, Hz/s:
    /// |ΔP| · f0 / (2 Σ H S).
    pub fn swing_rocof_hz_per_s(&self, step_mw: f64) -> f64 {
        step_mw.abs() * self.f0_hz / (2.0 * self.sum_hs_mws)
    }

    /// Each output's deviation, step after step, as the linear model
    /// answers the load series `p_mw` (spaced `step_s`; its first value
    /// is the operating point): each mode's state integrated exactly over
    /// a step with the load linear between rows (first-order hold, as the
    /// simulator's playback holds it).
    pub fn play(&self, p_mw: &[f64], step_s: f64) -> [Vec<f64>; 3] {
        let p0 = p_mw.first().copied().unwrap_or(0.0);
        // Per mode: e^{λh}, Φ1 = (e^{λh} − 1)/λ, Φ2 = (e^{λh} − 1 − λh)/(λ² h).
        let poles: Vec<[Complex<f64>; 3]> = self
            .modes
            .iter()
            .map(|m| {
                let l = Complex::new(m.re, m.im);
                let a = (l * step_s).exp();
                [a, (a - 1.0) / l, (a - 1.0 - l * step_s) / (l * l * step_s)]
            })
            .collect();
        let mut x = vec![Complex::new(0.0, 0.0); self.modes.len()];
        let mut out: [Vec<f64>; 3] = std::array::from_fn(|_| Vec::with_capacity(p_mw.len()));
        let mut u_prev = 0.0;
        for (i, p) in p_mw.iter().enumerate() {
            let u = p - p0;
            if i > 0 {
                for (xi, [a, f1, f2]) in x.iter_mut().zip(&poles) {
                    *xi = *a * *xi + *f1 * u_prev + *f2 * (u - u_prev);
                }
            }
            for (k, o) in out.iter_mut().enumerate() {
                let mut y = self.direct[k] * u;
                for (xi, m) in x.iter().zip(&self.modes) {
                    let [rr, ri] = m.residues[k];
                    let v = Complex::new(rr, ri) * *xi;
                    y += if m.im > 0.0 { 2.0 * v.re } else { v.re };
                }
                o.push(y);
            }
            u_prev = u;
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking
    use super::*;

    /// One lightly damped pair at 0.6 Hz on every output.
    pub(crate) fn one_mode(zeta: f64) -> ModalModel {
        let wn = 2.0 * std::f64::consts::PI * 0.6;
        let re = -zeta * wn;
        let im = wn * (1.0 - zeta * zeta).sqrt();
        ModalModel {
            tool: "test".into(),
            andes_version: String::new(),
            case: "t".into(),
            bus: 1,
            f0_hz: 60.0,
            s_base_mva: 100.0,
            p0_mw: 100.0,
            machines: Vec::new(),
            sum_hs_mws: 20_000.0,
            tie: None,
            outputs: OUTPUTS.iter().map(|s| s.to_string()).collect(),
            modes: vec![Mode {
                re,
                im,
                freq_hz: im / (2.0 * std::f64::consts::PI),
                damping_ratio: zeta,
                bus_participation: 1.0,
                residues: vec![[0.0, -1e-4], [0.0, -1e-4], [0.0, -0.5]],
            }],
            direct: vec![0.0; 3],
        }
    }

    #[test]
    fn the_linear_playback_of_a_sine_settles_at_h_of_its_frequency() {
        let m = one_mode(0.05);
        let hz = 0.55;
        let step_s = 0.01;
        let p: Vec<f64> = (0..20_000)
            .map(|i| 100.0 + (2.0 * std::f64::consts::PI * hz * i as f64 * step_s).sin())
            .collect();
        let [f, _, _] = m.play(&p, step_s);
        // The last 10 s (5.5 periods) hold the steady response.
        let tail = &f[f.len() - 1000..];
        let pp = tail.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            - tail.iter().copied().fold(f64::INFINITY, f64::min);
        let want = 2.0 * m.h(0, hz).norm();
        assert!((pp - want).abs() < 0.02 * want, "{pp} vs {want}");
        // Off resonance the gain is lower.
        assert!(m.h(0, 0.3).norm() < 0.5 * m.h(0, 0.6).norm());
    }

    #[test]
    fn a_broken_model_is_refused_with_what_to_do() {
        let mut m = one_mode(0.05);
        m.modes[0].re = 0.1;
        let e = ModalModel::parse(&serde_json::to_string(&m).unwrap()).unwrap_err();
        assert!(e.to_string().contains("unstable"), "{e}");
        let e = ModalModel::parse("{}").unwrap_err();
        assert!(e.to_string().contains("regenerate"), "{e}");
        let ok = one_mode(0.05);
        let back = ModalModel::parse(&serde_json::to_string(&ok).unwrap()).unwrap();
        assert_eq!(back, ok);
    }
}

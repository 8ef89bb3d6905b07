//! The one place the house plans Fourier transforms: a real series'
//! spectrum, its one-sided energy per bin, a band's share of it, and the
//! transforms of a buffer. Callers that transform many buffers of one
//! length carry a [`Planner`] (it caches plans); the rest call these.

use rustfft::FftPlanner;
pub use rustfft::num_complex::{Complex, Complex64};
use std::sync::Arc;

/// What a caller that transforms many buffers carries: rustfft's planner
/// (it caches each length's plan) and one scratch buffer, so that a
/// transform allocates nothing once its length has been seen.
pub struct Planner {
    plans: FftPlanner<f64>,
    scratch: Vec<Complex64>,
}

impl Default for Planner {
    fn default() -> Planner {
        Planner::new()
    }
}

impl Planner {
    /// A planner with no plan made yet.
    pub fn new() -> Planner {
        Planner {
            plans: FftPlanner::new(),
            scratch: Vec::new(),
        }
    }

    /// Transforms `buf` forward in place.
    pub fn forward(&mut self, buf: &mut [Complex64]) {
        let plan = self.plans.plan_fft_forward(buf.len());
        self.process(&plan, buf);
    }

    /// Transforms `buf` back in place (unnormalised: n × the series).
    pub fn inverse(&mut self, buf: &mut [Complex64]) {
        let plan = self.plans.plan_fft_inverse(buf.len());
        self.process(&plan, buf);
    }

    /// `plan` applied to `buf` with the carried scratch (what rustfft's
    /// `process` does with a scratch it allocates each time: the same
    /// result, bit for bit).
    fn process(&mut self, plan: &Plan, buf: &mut [Complex64]) {
        let need = plan.get_inplace_scratch_len();
        if self.scratch.len() < need {
            self.scratch.resize(need, Complex64::new(0.0, 0.0));
        }
        plan.process_with_scratch(buf, &mut self.scratch[..need]);
    }
}

/// A planned transform of one length, to apply to many buffers.
pub type Plan = Arc<dyn rustfft::Fft<f64>>;

/// The forward transform of `values − offset` (as complex values).
pub fn of_real(values: &[f64], offset: f64) -> Vec<Complex<f64>> {
    let mut buf: Vec<Complex<f64>> = values
        .iter()
        .map(|v| Complex::new(v - offset, 0.0))
        .collect();
    forward(&mut buf);
    buf
}

/// The forward transform of `values` with their mean removed (the
/// fluctuation's spectrum). Empty values give an empty spectrum.
pub fn of_fluctuation(values: &[f64]) -> Vec<Complex<f64>> {
    if values.is_empty() {
        return Vec::new();
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    of_real(values, mean)
}

/// Transforms `buf` forward in place.
pub fn forward(buf: &mut [Complex<f64>]) {
    FftPlanner::new().plan_fft_forward(buf.len()).process(buf);
}

/// Transforms `buf` back in place (unnormalised: n × the series).
pub fn inverse(buf: &mut [Complex<f64>]) {
    FftPlanner::new().plan_fft_inverse(buf.len()).process(buf);
}

/// A forward plan for buffers of `n` points.
pub fn plan_forward(n: usize) -> Plan {
    FftPlanner::new().plan_fft_forward(n)
}

/// An inverse plan for buffers of `n` points (unnormalised).
pub fn plan_inverse(n: usize) -> Plan {
    FftPlanner::new().plan_fft_inverse(n)
}

/// The one-sided energy of a real series' spectrum `spec` (n bins), per
/// bin 0 ..= n/2: `sides · |X_k|²`, each bin below Nyquist counted twice
/// (a real series' two sides), the Nyquist bin of an even n once. Bin 0
/// (DC) is 0: a fluctuation's energy has none.
pub fn one_sided_energy(spec: &[Complex<f64>]) -> Vec<f64> {
    let n = spec.len();
    let mut out = vec![0.0; n / 2 + 1];
    for (k, e) in out.iter_mut().enumerate().skip(1) {
        let sides = if 2 * k == n { 1.0 } else { 2.0 };
        *e = sides * spec[k].norm_sqr();
    }
    out
}

/// A band's energy beside the whole: `(inside, total)` of `energy` (per
/// bin, bin 0 left out), the bins whose frequency `hz(bin)` lies in
/// `[lo_hz, hi_hz]` inside. Summed in bin order, one pass.
pub fn band_energy(
    energy: &[f64],
    hz: impl Fn(usize) -> f64,
    [lo_hz, hi_hz]: [f64; 2],
) -> (f64, f64) {
    let (mut inside, mut total) = (0.0, 0.0);
    for (k, e) in energy.iter().enumerate().skip(1) {
        total += e;
        let f = hz(k);
        if f >= lo_hz && f <= hi_hz {
            inside += e;
        }
    }
    (inside, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(n: usize, cycles: f64, amp: f64) -> Vec<f64> {
        (0..n)
            .map(|j| 5.0 + amp * (2.0 * std::f64::consts::PI * cycles * j as f64 / n as f64).sin())
            .collect()
    }

    #[test]
    fn a_sines_energy_is_its_variance_times_n_squared_and_sits_in_its_bin() {
        let n = 64;
        let e = one_sided_energy(&of_fluctuation(&sine(n, 4.0, 3.0)));
        assert_eq!(e.len(), n / 2 + 1);
        // Parseval: Σ sides·|X_k|² = n² × variance (3²/2).
        let total: f64 = e.iter().sum();
        assert!((total / (n * n) as f64 - 4.5).abs() < 1e-9, "{total}");
        let (inside, all) = band_energy(&e, |k| k as f64, [3.5, 4.5]);
        assert!((inside / all - 1.0).abs() < 1e-12);
        let (outside, _) = band_energy(&e, |k| k as f64, [5.0, 32.0]);
        assert!(outside / all < 1e-12);
    }

    #[test]
    fn forward_then_inverse_gives_n_times_the_series() {
        let x = sine(16, 2.0, 1.0);
        let mut buf = of_real(&x, 0.0);
        inverse(&mut buf);
        for (a, b) in buf.iter().zip(&x) {
            assert!((a.re / 16.0 - b).abs() < 1e-12 && a.im.abs() < 1e-9);
        }
    }

    #[test]
    fn the_nyquist_bin_of_an_even_length_counts_once() {
        // An alternating series is all Nyquist: |X_{n/2}|² = n² a².
        let x: Vec<f64> = (0..8)
            .map(|j| if j % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let e = one_sided_energy(&of_real(&x, 0.0));
        assert!((e[4] - 64.0).abs() < 1e-9, "{e:?}");
        assert!(e[1..4].iter().all(|v| v.abs() < 1e-9));
    }
}

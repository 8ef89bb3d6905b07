//! The period of a run of rising crossings: each numbered by the whole
//! periods since the one before, and t0 + k·P fitted by least squares.

use super::OUTLIER_SHARE;

/// A least-squares fit of crossing times against their cycle numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct PeriodFit {
    /// The fitted period, ns.
    pub period_ns: f64,
    /// Time of cycle 0 (the first crossing's cycle), ns.
    pub t0_ns: f64,
    /// Standard error of the period, ns.
    pub period_se_ns: f64,
    /// Standard deviation of the crossings about the fit, ns.
    pub residual_sd_ns: f64,
    /// The crossings fitted (cycle number, time ns), in order.
    pub used: Vec<(i64, i64)>,
}

impl PeriodFit {
    /// Cycles from the first fitted crossing to the last.
    pub fn span_cycles(&self) -> i64 {
        match (self.used.first(), self.used.last()) {
            (Some(a), Some(b)) => b.0 - a.0,
            _ => 0,
        }
    }
}

/// Numbers `crossings` (sorted) by whole periods of about `guess_ns`
/// since the last one kept, starting at `crossings[start]`: a crossing
/// further than [`OUTLIER_SHARE`] of a period from a whole number of them
/// (a stray, a start-up step) is left out, so that it cannot shift the
/// numbering of those after it.
fn numbered_from(crossings: &[i64], start: usize, guess_ns: f64) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = vec![(0, crossings[start])];
    for &t in &crossings[start + 1..] {
        let Some(&(k, prev)) = out.last() else { break };
        let x = (t - prev) as f64 / guess_ns;
        let whole = x.round();
        if whole >= 1.0 && (x - whole).abs() <= OUTLIER_SHARE {
            out.push((k + whole as i64, t));
        }
    }
    out
}

/// The numbering ([`numbered_from`]) from whichever of the first few
/// crossings keeps the most of them (a first crossing that is itself a
/// stray would leave out every later one).
fn numbered(crossings: &[i64], guess_ns: f64) -> Vec<(i64, i64)> {
    // Reversed: of equally good numberings the earliest start is kept.
    (0..crossings.len().min(5))
        .rev()
        .map(|s| numbered_from(crossings, s, guess_ns))
        .max_by_key(Vec::len)
        .unwrap_or_default()
}

/// Least squares of t against k over `pts`: (t0, period, se, residual sd).
fn least_squares(pts: &[(i64, i64)]) -> Option<(f64, f64, f64, f64)> {
    let n = pts.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    // Times relative to the first, so nanoseconds since 1970 keep their digits.
    let base = pts[0].1;
    let km = pts.iter().map(|p| p.0 as f64).sum::<f64>() / nf;
    let tm = pts.iter().map(|p| (p.1 - base) as f64).sum::<f64>() / nf;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for p in pts {
        let dk = p.0 as f64 - km;
        sxx += dk * dk;
        sxy += dk * ((p.1 - base) as f64 - tm);
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let icpt = tm - slope * km;
    let ss: f64 = pts
        .iter()
        .map(|p| ((p.1 - base) as f64 - icpt - slope * p.0 as f64).powi(2))
        .sum();
    let var = ss / (nf - 2.0);
    Some((
        base as f64 + icpt,
        slope,
        (var / sxx).sqrt(),
        (ss / nf).sqrt(),
    ))
}

/// Fits t0 + k·P to `crossings` (sorted, ns) numbered with the period
/// guess `guess_ns`; crossings further than [`OUTLIER_SHARE`] of the
/// period from the first fit are left out and the rest fitted again.
/// None with fewer than three crossings.
pub fn fit_period(crossings: &[i64], guess_ns: f64) -> Option<PeriodFit> {
    if guess_ns <= 0.0 {
        return None;
    }
    let mut pts = numbered(crossings, guess_ns);
    let mut fit = least_squares(&pts)?;
    for _ in 0..2 {
        let (t0, p) = (fit.0, fit.1);
        let kept: Vec<(i64, i64)> = pts
            .iter()
            .copied()
            .filter(|(k, t)| (*t as f64 - t0 - p * *k as f64).abs() <= OUTLIER_SHARE * p)
            .collect();
        if kept.len() == pts.len() || kept.len() < 3 {
            break;
        }
        pts = kept;
        fit = least_squares(&pts)?;
    }
    Some(PeriodFit {
        t0_ns: fit.0,
        period_ns: fit.1,
        period_se_ns: fit.2,
        residual_sd_ns: fit.3,
        used: pts,
    })
}

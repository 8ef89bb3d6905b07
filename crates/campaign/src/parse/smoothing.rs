//! The `smoothing` list of a `duty` phase: the mitigations (a floor,
//! ramps, a ramp-down hysteresis, per GPU) its rungs run, one rung per
//! entry at every period and mode; `{}` is the plain rung.

use super::phase_ctx::PhaseCtx;
use super::raw::RawSmoothing;
use crate::ctx::Ctx;
use crate::error::CampaignError;
use powerlab_core::smoothing::SmoothingSpec;
use std::ops::Range;
use toml::Spanned;

/// The slowest ramp asked, W/s per GPU: a 1 kW swing in 1000 s.
pub const MIN_RATE_W_PER_S: f64 = 1.0;
/// The fastest, W/s per GPU: a 1 kW swing in 1 µs (no limit, in effect).
pub const MAX_RATE_W_PER_S: f64 = 1e9;

/// The keys an entry accepts, in the order error messages list them.
pub(super) const KEYS: &[&str] = &[
    "floor_pct",
    "ramp_up_w_per_s",
    "ramp_down_w_per_s",
    "ramp_down_hysteresis_ms",
];

/// What an entry is checked against: the phase's name (for field paths),
/// and its shortest off-phase and the period that has it, ms.
struct Entries<'a> {
    ctx: &'a Ctx<'a>,
    phase: &'a str,
    off_ms: f64,
    off_period_ms: f64,
}

impl Entries<'_> {
    /// `phases.<name>.smoothing[i]`, then `.key` where given.
    fn f(&self, i: usize, key: Option<&str>) -> String {
        let mut f = format!("phases.{}.smoothing[{i}]", self.phase);
        if let Some(k) = key {
            f.push('.');
            f.push_str(k);
        }
        f
    }
}

/// Validates the `smoothing` list of duty phase `phase` (its periods and
/// duty already valid); empty when the key is absent.
pub(super) fn validate(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    phase: &str,
    periods_ms: &[f64],
    duty: f64,
) -> Result<Vec<SmoothingSpec>, CampaignError> {
    let Some(list) = &pc.p.smoothing else {
        return Ok(Vec::new());
    };
    let field = format!("phases.{phase}.smoothing");
    if list.get_ref().is_empty() {
        return Err(ctx.err(
            list.span(),
            field,
            "the list names no mitigation",
            Some("`{}` (the plain rung) and one or more of `{ floor_pct = 60 }`, `{ ramp_up_w_per_s = 50000, ramp_down_w_per_s = 50000 }`"),
        ));
    }
    if duty >= 1.0 {
        return Err(ctx.err(
            list.span(),
            field,
            "a constant load (duty = 1) has no swing to smooth",
            Some("a square wave: 0.01 <= duty <= 0.99"),
        ));
    }
    let (off_period_ms, off_ms) = periods_ms
        .iter()
        .map(|p| (*p, p * (1.0 - duty)))
        .fold((0.0, f64::INFINITY), |a, b| if b.1 < a.1 { b } else { a });
    let at = Entries {
        ctx,
        phase,
        off_ms,
        off_period_ms,
    };
    let mut specs: Vec<SmoothingSpec> = Vec::new();
    for (i, e) in list.get_ref().iter().enumerate() {
        let spec = at.entry(i, e)?;
        if let Some(j) = specs.iter().position(|s| s.label() == spec.label()) {
            let plain = if spec.is_none() {
                " (`{}`, the plain rung, is listed at most once)"
            } else {
                ""
            };
            return Err(ctx.err(
                e.span(),
                at.f(i, None),
                format!(
                    "smoothing[{j}] and smoothing[{i}] both ask for `{}`{plain}: their rungs would share a label",
                    spec.label()
                ),
                Some("distinct entries"),
            ));
        }
        specs.push(spec);
    }
    Ok(specs)
}

impl Entries<'_> {
    /// Entry `i`: known keys, each value in its range, and a hysteresis
    /// only where it delays something.
    fn entry(&self, i: usize, e: &Spanned<RawSmoothing>) -> Result<SmoothingSpec, CampaignError> {
        if let Some((k, v)) = e
            .get_ref()
            .iter()
            .find(|(k, _)| !KEYS.contains(&k.as_str()))
        {
            return Err(self.ctx.err(
                v.span(),
                self.f(i, Some(k)),
                format!("`{k}` is not a smoothing key"),
                Some(&KEYS.join(", ")),
            ));
        }
        let mut spec = SmoothingSpec::default();
        if let Some((x, span)) = self.number(i, e, "floor_pct")? {
            if !(x.is_finite() && (0.0..100.0).contains(&x)) {
                return Err(self.ctx.err(
                    span,
                    self.f(i, Some("floor_pct")),
                    format!("a floor of {x} % is out of range"),
                    Some("0 <= floor_pct < 100 (% of the power limit held while the work is off, e.g. 60)"),
                ));
            }
            spec.floor_pct = x;
        }
        spec.ramp_up_w_per_s = self.rate(i, e, "ramp_up_w_per_s")?;
        spec.ramp_down_w_per_s = self.rate(i, e, "ramp_down_w_per_s")?;
        if let Some((x, span)) = self.number(i, e, "ramp_down_hysteresis_ms")? {
            self.check_hysteresis(i, x, span, &spec)?;
            spec.ramp_down_hysteresis_ms = x;
        }
        Ok(spec)
    }

    /// A rate in W/s, within [`MIN_RATE_W_PER_S`]..[`MAX_RATE_W_PER_S`], where given.
    fn rate(
        &self,
        i: usize,
        e: &Spanned<RawSmoothing>,
        key: &str,
    ) -> Result<Option<f64>, CampaignError> {
        let Some((x, span)) = self.number(i, e, key)? else {
            return Ok(None);
        };
        if x.is_finite() && (MIN_RATE_W_PER_S..=MAX_RATE_W_PER_S).contains(&x) {
            return Ok(Some(x));
        }
        Err(self.ctx.err(
            span,
            self.f(i, Some(key)),
            format!("a rate of {x} W/s is out of range"),
            Some(&format!(
                "{MIN_RATE_W_PER_S} <= {key} <= {MAX_RATE_W_PER_S:e}, W/s per GPU, e.g. 50000 (a 600 W swing in 12 ms)"
            )),
        ))
    }

    /// A hysteresis of `x` ms: at least 0, shorter than every off-phase,
    /// and delaying a ramp down or a floor.
    fn check_hysteresis(
        &self,
        i: usize,
        x: f64,
        span: Range<usize>,
        spec: &SmoothingSpec,
    ) -> Result<(), CampaignError> {
        let field = self.f(i, Some("ramp_down_hysteresis_ms"));
        let allowed = format!(
            "0 <= ramp_down_hysteresis_ms < {} (the off-phase at {} ms)",
            self.off_ms, self.off_period_ms
        );
        if !(x.is_finite() && x >= 0.0) {
            return Err(self.ctx.err(
                span,
                field,
                format!("a hysteresis of {x} ms is out of range"),
                Some(&allowed),
            ));
        }
        if x >= self.off_ms {
            return Err(self.ctx.err(
                span,
                field,
                format!(
                    "a hysteresis of {x} ms is not shorter than the off-phase at {} ms ({} ms = period × (1 − duty)): the draw would never fall",
                    self.off_period_ms, self.off_ms
                ),
                Some(&allowed),
            ));
        }
        if x > 0.0 && spec.floor_pct == 0.0 && spec.ramp_down_w_per_s.is_none() {
            return Err(self.ctx.err(
                span,
                field,
                format!("a ramp-down hysteresis of {x} ms alone has no effect: it delays a ramp down or the step to a floor, and this entry asks for neither"),
                Some("ramp_down_w_per_s (e.g. 20000) or floor_pct (e.g. 60) in the same entry, or no ramp_down_hysteresis_ms"),
            ));
        }
        Ok(())
    }

    /// The number under `key` in entry `i` (an integer or a float) and
    /// where it is written, if given.
    fn number(
        &self,
        i: usize,
        e: &Spanned<RawSmoothing>,
        key: &str,
    ) -> Result<Option<(f64, Range<usize>)>, CampaignError> {
        let Some(v) = e.get_ref().get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            toml::Value::Integer(n) => Ok(Some((*n as f64, v.span()))),
            toml::Value::Float(x) => Ok(Some((*x, v.span()))),
            other => Err(self.ctx.err(
                v.span(),
                self.f(i, Some(key)),
                format!("expected a number, found a {}", other.type_str()),
                Some("a number"),
            )),
        }
    }
}

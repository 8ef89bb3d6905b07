//! The `smoothing` list of a `duty` phase: the mitigations (a floor,
//! ramps, a ramp-down hysteresis, per GPU) its rungs run, one rung per
//! entry at every period and mode; `{}` is the plain rung.

use super::phase_ctx::PhaseCtx;
use super::raw::RawSmoothing;
use crate::ctx::Ctx;
use crate::error::CampaignError;
use powerlab_core::smoothing::SmoothingSpec;
use powerlab_core::units::W_PER_GW;
use std::ops::Range;
use toml::Spanned;

/// The slowest ramp asked, W/s per GPU: a 1 kW swing in 1000 s.
pub const MIN_RATE_W_PER_S: f64 = 1.0;
/// The fastest, W/s per GPU: a 1 kW swing in 1 µs (no limit, in effect).
pub const MAX_RATE_W_PER_S: f64 = W_PER_GW;

/// The GPU a ramp's reach is judged against when the campaign is
/// validated (each GPU's own draws are known only at the rung's
/// calibration): a datacentre GPU of the class this harness measures
/// (H100 / H200 SXM), with a 700 W power limit and 100 W idle.
pub const REFERENCE_LIMIT_W: f64 = 700.0;
/// The reference GPU's idle draw, W (see [`REFERENCE_LIMIT_W`]).
pub const REFERENCE_IDLE_W: f64 = 100.0;

/// The step a ramp must cross on the reference GPU, W: from the floor
/// asked (`floor_pct` of its limit, never below idle) to full (its limit).
/// 600 W without a floor, 280 W above a floor of 60 %, 70 W above 90 %.
pub fn reference_step_w(floor_pct: f64) -> f64 {
    REFERENCE_LIMIT_W - (floor_pct / 100.0 * REFERENCE_LIMIT_W).max(REFERENCE_IDLE_W)
}

/// `x` with at most two decimals, trailing zeros dropped (`250`, `0.25`).
fn short(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The keys an entry accepts, in the order error messages list them.
pub(super) const KEYS: &[&str] = &[
    "floor_pct",
    "ramp_up_w_per_s",
    "ramp_down_w_per_s",
    "ramp_down_hysteresis_ms",
];

/// What an entry is checked against: the phase's name (for field paths),
/// its shortest off-phase and the period that has it, ms, and its longest
/// period and duty (the longest on- and off-phases a ramp has).
struct Entries<'a> {
    ctx: &'a Ctx<'a>,
    phase: &'a str,
    off_ms: f64,
    off_period_ms: f64,
    longest_period_ms: f64,
    duty: f64,
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
        longest_period_ms: periods_ms.iter().copied().fold(0.0, f64::max),
        duty,
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
        self.check_reach(i, e, &spec, "ramp_up_w_per_s")?;
        self.check_reach(i, e, &spec, "ramp_down_w_per_s")?;
        Ok(spec)
    }

    /// A ramp (`key`, W/s) that some period of the phase lets finish: it
    /// crosses the reference GPU's step ([`reference_step_w`], from the
    /// floor asked to full) within the longest on-phase (a ramp up) or
    /// the longest off-phase after the hysteresis (a ramp down). One that
    /// cannot is not a mitigation of this wave: each phase would end
    /// part-way up its ramp, and the emulated wave be another one (1 W/s
    /// ran the simulated node upside down, 129 W on and 706 W off).
    fn check_reach(
        &self,
        i: usize,
        e: &Spanned<RawSmoothing>,
        spec: &SmoothingSpec,
        key: &str,
    ) -> Result<(), CampaignError> {
        let (rate, phase, room_ms) = if key == "ramp_up_w_per_s" {
            let on = self.longest_period_ms * self.duty;
            (spec.ramp_up_w_per_s, "on-phase", on)
        } else {
            let off = self.longest_period_ms * (1.0 - self.duty);
            (
                spec.ramp_down_w_per_s,
                "off-phase",
                off - spec.ramp_down_hysteresis_ms,
            )
        };
        let (Some(rate), Some((_, span))) = (rate, self.number(i, e, key)?) else {
            return Ok(());
        };
        let step_w = reference_step_w(spec.floor_pct);
        let reach_w = rate * room_ms / 1000.0;
        if reach_w >= step_w * (1.0 - 1e-9) || room_ms <= 0.0 {
            return Ok(());
        }
        let after = if key == "ramp_down_w_per_s" && spec.ramp_down_hysteresis_ms > 0.0 {
            format!(" after the {} ms hysteresis", spec.ramp_down_hysteresis_ms)
        } else {
            String::new()
        };
        let from = if spec.floor_pct > 0.0 {
            format!("a floor of {} %", spec.floor_pct)
        } else {
            "idle".to_string()
        };
        let room = short(room_ms);
        Err(self.ctx.err(
            span,
            self.f(i, Some(key)),
            format!(
                "a ramp of {rate} W/s crosses {} W in the longest {phase} ({room} ms{after}, at {} ms), short of the {step_w:.0} W a {REFERENCE_LIMIT_W:.0} W GPU steps from {from} to full: no period of the phase lets the ramp finish, so the wave run would not be the one asked",
                short(reach_w),
                short(self.longest_period_ms)
            ),
            Some(&format!(
                "{key} >= {:.0} W/s (the {step_w:.0} W step within {room} ms), or a longer period in periods_ms",
                (step_w / (room_ms / 1000.0)).ceil()
            )),
        ))
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

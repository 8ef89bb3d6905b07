//! What every part of a phase's validation shares: the phase table as
//! written, its place in the file, what it inherits from the rest of the
//! file, and how its fields are named in errors.

use super::raw::RawPhase;
use super::table::{self, Count, Num};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{Mode, RackStagger};
use std::ops::Range;
use toml::Spanned;

/// What a phase takes from the rest of the file.
pub(super) struct PhaseDefaults {
    /// `[defaults] repeats`.
    pub(super) repeats: u32,
    /// `[defaults] warmup_s`.
    pub(super) warmup_s: f64,
    /// `[defaults] cooldown_s`.
    pub(super) cooldown_s: f64,
    /// How many GPUs `gpus` lists, when it lists them.
    pub(super) listed_gpus: Option<usize>,
    /// `[rack] stagger`.
    pub(super) rack_stagger: RackStagger,
}

/// The phase being validated: its raw table, where it sits and what it
/// inherits; names its fields in errors (`phase[3].duty`).
pub(super) struct PhaseCtx<'a> {
    /// The table as written.
    pub(super) p: &'a RawPhase,
    /// Position in the file, 0-based.
    pub(super) index: usize,
    /// The whole table, for errors about a key that is absent.
    pub(super) span: Range<usize>,
    /// What the phase takes from the rest of the file.
    pub(super) defaults: &'a PhaseDefaults,
}

impl PhaseCtx<'_> {
    /// The dotted field path of `key` (`phase[3].duty`).
    pub(super) fn f(&self, key: &str) -> String {
        format!("phase[{}].{key}", self.index)
    }

    /// Where `v` is written, else the phase's table.
    pub(super) fn span_of<T>(&self, v: &Option<Spanned<T>>) -> Range<usize> {
        v.as_ref().map(|s| s.span()).unwrap_or(self.span.clone())
    }

    /// The value of number key `n`, `default` when absent.
    pub(super) fn num(
        &self,
        ctx: &Ctx<'_>,
        v: &Option<Spanned<f64>>,
        n: &Num,
        default: f64,
    ) -> Result<f64, CampaignError> {
        ctx.ranged(v, &self.f(n.key), default, (n.lo, n.hi), n.lo_open)
    }

    /// The value of count key `c`, `default` when absent.
    pub(super) fn count(
        &self,
        ctx: &Ctx<'_>,
        v: &Option<Spanned<i64>>,
        c: &Count,
        default: u32,
    ) -> Result<u32, CampaignError> {
        ctx.count(v, &self.f(c.key), default, c.max)
    }
}

/// A mode's name → the mode.
pub(super) fn parse_mode(
    ctx: &Ctx<'_>,
    s: &str,
    span: Range<usize>,
    field: &str,
) -> Result<Mode, CampaignError> {
    match s {
        "in_phase" => Ok(Mode::InPhase),
        "staggered" => Ok(Mode::Staggered),
        other => Err(ctx.err(
            span,
            field,
            format!("unknown mode `{other}`"),
            Some(table::MODES),
        )),
    }
}

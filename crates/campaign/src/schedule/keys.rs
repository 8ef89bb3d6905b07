//! What every table's checks share: a required key, a key refused where
//! another's value does not take it.

use crate::ctx::Ctx;
use crate::error::CampaignError;
use std::ops::Range;
use toml::Spanned;

/// `v`, or an error at `at` (the table, or the key that calls for it)
/// saying `field` is required.
pub(super) fn need<'a, T>(
    ctx: &Ctx<'_>,
    v: &'a Option<Spanned<T>>,
    at: Range<usize>,
    field: &str,
    allowed: &str,
) -> Result<&'a Spanned<T>, CampaignError> {
    v.as_ref()
        .ok_or_else(|| ctx.err(at, field, format!("`{field}` is required"), Some(allowed)))
}

/// An error for `v`, written where `why` says it does not belong.
pub(super) fn refuse<T>(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<T>>,
    field: &str,
    why: &str,
    allowed: &str,
) -> Result<(), CampaignError> {
    match v {
        None => Ok(()),
        Some(v) => Err(ctx.err(v.span(), field, why, Some(allowed))),
    }
}

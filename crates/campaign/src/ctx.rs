//! The located-error context shared by the campaign parser and the
//! `[[node_power]]` validator: the file's name and text, and the range
//! checks every numeric key goes through.

use crate::error::{CampaignError, line_col};
use std::ops::Range;
use toml::Spanned;

/// Where a campaign's text came from: every error names the file and the
/// line and column of the value at fault.
pub(crate) struct Ctx<'a> {
    /// File name as given by the user.
    pub(crate) file: &'a str,
    /// The file's text.
    pub(crate) source: &'a str,
}

impl Ctx<'_> {
    /// An error at `span`, naming `field` and, where given, what is allowed.
    pub(crate) fn err(
        &self,
        span: Range<usize>,
        field: impl Into<String>,
        message: impl Into<String>,
        allowed: Option<&str>,
    ) -> CampaignError {
        let (line, column) = line_col(self.source, span.start);
        CampaignError {
            file: self.file.to_string(),
            line,
            column,
            field: Some(field.into()),
            message: message.into(),
            allowed: allowed.map(str::to_string),
        }
    }

    /// A number in `lo..=hi` (`lo` excluded when `lo_open`), else an error
    /// that states the range.
    pub(crate) fn ranged(
        &self,
        v: &Option<Spanned<f64>>,
        field: &str,
        default: f64,
        (lo, hi): (f64, f64),
        lo_open: bool,
    ) -> Result<f64, CampaignError> {
        let Some(s) = v else { return Ok(default) };
        let x = *s.get_ref();
        let above = if lo_open { x > lo } else { x >= lo };
        if x.is_finite() && above && x <= hi {
            return Ok(x);
        }
        let allowed = format!("{lo} {} {field} <= {hi}", if lo_open { "<" } else { "<=" });
        Err(self.err(
            s.span(),
            field,
            format!("{x} is out of range"),
            Some(&allowed),
        ))
    }

    /// A number in `0..=hi`.
    pub(crate) fn non_negative(
        &self,
        v: &Option<Spanned<f64>>,
        field: &str,
        default: f64,
        hi: f64,
    ) -> Result<f64, CampaignError> {
        self.ranged(v, field, default, (0.0, hi), false)
    }

    /// A whole number in `1..=max`, else an error that states the range.
    pub(crate) fn count(
        &self,
        v: &Option<Spanned<i64>>,
        field: &str,
        default: u32,
        max: i64,
    ) -> Result<u32, CampaignError> {
        match v {
            None => Ok(default),
            Some(s) if (1..=max).contains(s.get_ref()) => Ok(*s.get_ref() as u32),
            Some(s) => Err(self.err(
                s.span(),
                field,
                format!(
                    "must be a whole number from 1 to {max}, got {}",
                    s.get_ref()
                ),
                Some(&format!("1..={max}")),
            )),
        }
    }
}

//! Command-line flags over a schedule file (`powerlab predict --gpus …`).
//!
//! The file is read as written, each flag then replaces its key, and the
//! result is validated once. Every error stays located where the value at
//! fault came from: a key of the file at its own line and column, a value
//! a flag gave under that flag's name (`--compute-fraction 1.5`), never
//! in a document re-serialised from both.
//!
//! How: a flag's value carries a span into a trailer appended, for the
//! validator's eyes only, after the file's text (one line for the command
//! line as a whole, then one a flag). An error located in the trailer is
//! handed back as the flag's.

use super::raw::{RawSchedule, RawSpread};
use crate::error::CampaignError;
use std::ops::Range;
use toml::Spanned;

/// What one command-line flag sets in the schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Setting {
    /// `job.gpus`.
    Gpus(u64),
    /// `job.gpus_per_node`.
    GpusPerNode(u32),
    /// `job.iteration_ms`.
    IterationMs(f64),
    /// `job.compute_fraction`.
    ComputeFraction(f64),
    /// `mitigation.profile`.
    Profile(String),
    /// `mitigation.stagger_groups`.
    StaggerGroups(u32),
    /// The whole `[spread]`: normal with this σ, ms; 0 is no spread
    /// (`kind = "none"`).
    SpreadSigmaMs(f64),
    /// `output.span_s`.
    SpanS(f64),
    /// `output.resolution_ms`.
    ResolutionMs(f64),
}

impl Setting {
    /// The value as the command line wrote it.
    fn value(&self) -> String {
        match self {
            Self::Gpus(x) => x.to_string(),
            Self::GpusPerNode(x) | Self::StaggerGroups(x) => x.to_string(),
            Self::IterationMs(x)
            | Self::ComputeFraction(x)
            | Self::SpreadSigmaMs(x)
            | Self::SpanS(x)
            | Self::ResolutionMs(x) => x.to_string(),
            Self::Profile(p) => p.clone(),
        }
    }
}

/// A flag as given: its name on the command line (`--compute-fraction`)
/// and the key it sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The flag's name, as the user typed it (`--compute-fraction`).
    pub flag: String,
    /// What it sets.
    pub setting: Setting,
}

impl Override {
    /// `--flag value`.
    fn words(&self) -> String {
        format!("{} {}", self.flag, self.setting.value())
    }
}

/// What the command line set: where the validator reads each flag's value,
/// and how to hand an error located there back as the flag's.
pub(super) struct Trailer {
    /// The file's text, then one line for the command line as a whole,
    /// then one a flag.
    pub(super) text: String,
    /// Lines of the file itself (the trailer starts on the next).
    file_lines: usize,
    /// The trailer's lines' spans in `text`: the command line, then each flag.
    spans: Vec<Range<usize>>,
    /// The trailer's lines' words.
    words: Vec<String>,
}

impl Trailer {
    /// The file's `source` with a trailer for `overrides`.
    pub(super) fn new(source: &str, overrides: &[Override]) -> Self {
        let mut text = source.to_string();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let file_lines = text.matches('\n').count();
        let words: Vec<String> = std::iter::once("the command line's flags".to_string())
            .chain(overrides.iter().map(Override::words))
            .collect();
        let mut spans = Vec::with_capacity(words.len());
        for w in &words {
            let start = text.len();
            text.push_str(w);
            spans.push(start..text.len());
            text.push('\n');
        }
        Self {
            text,
            file_lines,
            spans,
            words,
        }
    }

    /// `raw` with every flag's value in place of the file's.
    pub(super) fn apply(&self, mut raw: RawSchedule, overrides: &[Override]) -> RawSchedule {
        let whole = self.spans[0].clone();
        for (o, at) in overrides.iter().zip(&self.spans[1..]) {
            let f = |x: f64| Some(Spanned::new(at.clone(), x));
            let int = |x: u64| {
                Some(Spanned::new(
                    at.clone(),
                    i64::try_from(x).unwrap_or(i64::MAX),
                ))
            };
            match &o.setting {
                Setting::Gpus(x) => table(&mut raw.job, &whole).gpus = int(*x),
                Setting::GpusPerNode(x) => {
                    table(&mut raw.job, &whole).gpus_per_node = int(u64::from(*x));
                }
                Setting::IterationMs(x) => table(&mut raw.job, &whole).iteration_ms = f(*x),
                Setting::ComputeFraction(x) => {
                    table(&mut raw.job, &whole).compute_fraction = f(*x);
                }
                Setting::Profile(p) => {
                    table(&mut raw.mitigation, &whole).profile =
                        Some(Spanned::new(at.clone(), p.clone()));
                }
                Setting::StaggerGroups(x) => {
                    table(&mut raw.mitigation, &whole).stagger_groups = int(u64::from(*x));
                }
                Setting::SpreadSigmaMs(x) => {
                    // 0: no spread; anything else is validated as a σ.
                    let none = *x == 0.0;
                    let kind = if none { "none" } else { "normal" };
                    let spread = RawSpread {
                        kind: Some(Spanned::new(at.clone(), kind.to_string())),
                        sigma_ms: if none { None } else { f(*x) },
                        width_ms: None,
                    };
                    raw.spread = Some(Spanned::new(at.clone(), spread));
                }
                Setting::SpanS(x) => table(&mut raw.output, &whole).span_s = f(*x),
                Setting::ResolutionMs(x) => table(&mut raw.output, &whole).resolution_ms = f(*x),
            }
        }
        raw
    }

    /// `e` as the user must read it: an error in the file as it is, one
    /// located at a flag's value under that flag's name (line and column
    /// 0), one at a table only the flags made as the command line's.
    pub(super) fn relocate(&self, mut e: CampaignError) -> CampaignError {
        let Some(k) = e.line.checked_sub(self.file_lines + 1) else {
            return e;
        };
        let Some(words) = self.words.get(k) else {
            return e;
        };
        e.file = if k == 0 {
            words.clone()
        } else {
            format!("the command line's {words}")
        };
        e.line = 0;
        e.column = 0;
        e
    }
}

/// The table `t`, made (located at `at`) where the file has none.
fn table<'a, T: Default>(t: &'a mut Option<Spanned<T>>, at: &Range<usize>) -> &'a mut T {
    t.get_or_insert_with(|| Spanned::new(at.clone(), T::default()))
        .get_mut()
}

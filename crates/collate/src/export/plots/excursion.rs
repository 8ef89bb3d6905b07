//! The excursion envelope against the supply (`plots/verdict_envelope`):
//! the highest mean node power over each window length, 1 ms to 10 s, of
//! the whole run and of the worst rung of each mode and of the
//! mitigations, with the `[supply]`'s excursion limit and rated power.

use super::draw::DrawResult;
use super::verdict::mode_words;
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::envelope::{Envelope, RungEnvelope, WINDOWS_MS};
use powerlab_analysis::summary::RungSummary;
use powerlab_campaign::Supply;
use powerlab_rundir::{Mode, PhaseKind};

/// Which rungs an envelope line stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeGroup {
    /// Every rung: per window, the highest of any rung.
    Run,
    /// The worst plain duty rung of one mode.
    Plain(Mode),
    /// The worst duty rung that ran a mitigation.
    Mitigation,
    /// A prediction's scenario, by its order (0: the schedule's own).
    Scenario(usize),
}

impl EnvelopeGroup {
    /// Its colour.
    fn color(self) -> RGBColor {
        match self {
            EnvelopeGroup::Run => RGBColor(0, 0, 0),
            EnvelopeGroup::Plain(Mode::InPhase) => RGBColor(200, 40, 40),
            EnvelopeGroup::Plain(Mode::Staggered) => RGBColor(20, 90, 200),
            EnvelopeGroup::Mitigation => RGBColor(30, 150, 60),
            EnvelopeGroup::Scenario(i) => {
                const SCENARIOS: [RGBColor; 7] = [
                    RGBColor(0, 0, 0),
                    RGBColor(200, 40, 40),
                    RGBColor(20, 90, 200),
                    RGBColor(30, 150, 60),
                    RGBColor(150, 60, 180),
                    RGBColor(220, 130, 0),
                    RGBColor(0, 150, 160),
                ];
                SCENARIOS[i % SCENARIOS.len()]
            }
        }
    }

    /// Its line width: the run's and the schedule's own line stand out.
    fn width(self) -> u32 {
        match self {
            EnvelopeGroup::Run | EnvelopeGroup::Scenario(0) => 3,
            _ => 2,
        }
    }
}

/// How the envelope chart writes power: what it is, its unit and scale.
#[derive(Debug, Clone, Copy)]
pub(super) struct PowerAxis {
    /// `node power`, `job power`.
    pub(super) what: &'static str,
    /// `W`, `MW`.
    pub(super) unit: &'static str,
    /// Units per W.
    pub(super) scale: f64,
    /// Decimals of the labels.
    pub(super) decimals: usize,
}

impl PowerAxis {
    /// A node's or a rack's: W.
    pub(super) const NODE: PowerAxis = PowerAxis {
        what: "node power",
        unit: "W",
        scale: 1.0,
        decimals: 0,
    };
    /// A predicted job's: MW.
    pub(super) const JOB: PowerAxis = PowerAxis {
        what: "job power",
        unit: "MW",
        scale: 1e-6,
        decimals: 1,
    };

    /// `w` in the axis' unit, with it.
    fn words(self, w: f64) -> String {
        format!("{:.*} {}", self.decimals, w * self.scale, self.unit)
    }
}

/// One line of the envelope plot: its group, legend and (window ms,
/// highest mean W) points.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeLine {
    /// The rungs it stands for.
    pub group: EnvelopeGroup,
    /// The legend's words.
    pub name: String,
    /// (window ms, highest mean node power W), windows increasing.
    pub points: Vec<(f64, f64)>,
}

/// A rung's stated figures, (window ms, W).
fn figures(r: &RungEnvelope) -> Vec<(f64, f64)> {
    r.points
        .iter()
        .filter_map(|p| Some((p.window_ms, p.max_mean_w?)))
        .collect()
}

/// The run's line (per window, the highest figure of any rung), then the
/// worst duty rung (the highest figure at any window) in phase, staggered
/// and among the mitigations, each where there is one.
pub fn envelope_lines(envelope: &Envelope, rungs: &[RungSummary]) -> Vec<EnvelopeLine> {
    let mut lines = Vec::new();
    let run: Vec<(f64, f64)> = WINDOWS_MS
        .iter()
        .filter_map(|&w| {
            envelope
                .rungs
                .iter()
                .flat_map(|r| r.points.iter())
                .filter(|p| p.window_ms == w)
                .filter_map(|p| p.max_mean_w)
                .reduce(f64::max)
                .map(|m| (w, m))
        })
        .collect();
    if !run.is_empty() {
        lines.push(EnvelopeLine {
            group: EnvelopeGroup::Run,
            name: "every rung (the run's highest)".into(),
            points: run,
        });
    }
    let group_of = |id: u32| {
        let r = rungs.iter().find(|r| r.rung.id == id)?;
        (r.rung.kind == PhaseKind::Duty).then(|| {
            if r.rung.smoothed() {
                EnvelopeGroup::Mitigation
            } else {
                EnvelopeGroup::Plain(r.rung.mode)
            }
        })
    };
    for group in [
        EnvelopeGroup::Plain(Mode::InPhase),
        EnvelopeGroup::Plain(Mode::Staggered),
        EnvelopeGroup::Mitigation,
    ] {
        let highest = |r: &&RungEnvelope| figures(r).iter().map(|p| p.1).fold(f64::MIN, f64::max);
        let worst = envelope
            .rungs
            .iter()
            .filter(|r| group_of(r.rung_id) == Some(group) && !figures(r).is_empty())
            .max_by(|a, b| highest(a).total_cmp(&highest(b)));
        if let Some(r) = worst {
            let what = match group {
                EnvelopeGroup::Plain(m) => mode_words(m),
                _ => "mitigation",
            };
            lines.push(EnvelopeLine {
                group,
                name: format!("worst {what}: {}", r.label),
                points: figures(r),
            });
        }
    }
    lines
}

/// A prediction's lines: one per scenario, in order, each with its label.
pub fn scenario_lines(envelope: &Envelope) -> Vec<EnvelopeLine> {
    envelope
        .rungs
        .iter()
        .enumerate()
        .filter(|(_, r)| !figures(r).is_empty())
        .map(|(i, r)| EnvelopeLine {
            group: EnvelopeGroup::Scenario(i),
            name: r.label.clone(),
            points: figures(r),
        })
        .collect()
}

/// What the envelope plot's caption says of the supply.
pub fn supply_words(supply: Option<&Supply>) -> String {
    supply_words_with(supply, PowerAxis::NODE)
}

/// [`supply_words`] with the rated power in `axis`' unit.
pub(super) fn supply_words_with(supply: Option<&Supply>, axis: PowerAxis) -> String {
    match supply {
        None => "no [supply] declared".into(),
        Some(s) if s.excursions.is_empty() => match s.rated_w {
            Some(r) => format!(
                "[supply] rated {}, no excursion limit declared",
                axis.words(r)
            ),
            None => "[supply] declares no limit".into(),
        },
        Some(s) => match s.rated_w {
            Some(r) => format!(
                "dashed: [supply] excursion limit; dotted: rated {}",
                axis.words(r)
            ),
            None => "dashed: [supply] excursion limit".into(),
        },
    }
}

/// The run's envelope chart: the lines of [`envelope_lines`].
pub(super) fn envelope_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    envelope: &Envelope,
    rungs: &[RungSummary],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let lines = envelope_lines(envelope, rungs);
    lines_chart(area, envelope.supply.as_ref(), &lines, PowerAxis::NODE)
}

/// The chart's extent `(x0, x1, top)`: the window axis from a little below
/// the shortest window to a little beyond the longest of [`WINDOWS_MS`], the
/// lines and the `limits` points; the power axis (in `axis`' unit, scaled by
/// `k`) up to 15 % above the highest of the lines, limits, rated power and
/// `k` itself.
fn chart_extent(
    lines: &[EnvelopeLine],
    limits: &[(f64, f64)],
    rated_w: Option<f64>,
    k: f64,
) -> (f64, f64, f64) {
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1 * k))
        .chain(limits.iter().map(|p| p.1))
        .chain(rated_w.map(|r| r * k))
        .fold(k, f64::max)
        * 1.15;
    let longest = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .chain(limits.iter().map(|p| p.0))
        .fold(WINDOWS_MS[WINDOWS_MS.len() - 1], f64::max);
    (WINDOWS_MS[0] * 0.8, longest * 1.25, top)
}

/// `lines` against the supply's excursion limit (log-linear between its
/// points, as `limit_at`) and its rated power, in `axis`' unit; points
/// above the limit crossed.
pub(super) fn lines_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    supply: Option<&Supply>,
    lines: &[EnvelopeLine],
    axis: PowerAxis,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let k = axis.scale;
    let limits: Vec<(f64, f64)> = supply
        .map(|s| {
            s.excursions
                .iter()
                .map(|e| (e.duration_ms, e.watts * k))
                .collect()
        })
        .unwrap_or_default();
    let rated_w = supply.and_then(|s| s.rated_w);
    let (x0, x1, top) = chart_extent(lines, &limits, rated_w, k);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "highest mean {} vs window — {}",
                axis.what,
                supply_words_with(supply, axis)
            ),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((x0..x1).log_scale(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("window (ms, log)")
        .y_desc(format!("highest mean {} ({})", axis.what, axis.unit))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.*}", axis.decimals))
        .label_style(("sans-serif", 12))
        .draw()?;
    let grey = RGBColor(60, 60, 60);
    if !limits.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(
                limits.iter().copied(),
                8,
                5,
                grey.stroke_width(2),
            ))?
            .label("[supply] excursion limit")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    }
    if let Some(r) = rated_w {
        chart
            .draw_series(DashedLineSeries::new(
                [(x0, r * k), (x1, r * k)],
                2,
                4,
                grey.stroke_width(2),
            ))?
            .label(format!("[supply] rated {}", axis.words(r)))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    }
    for l in lines {
        let color = l.group.color();
        chart
            .draw_series(LineSeries::new(
                l.points.iter().map(|p| (p.0, p.1 * k)),
                color.stroke_width(l.group.width()),
            ))?
            .label(l.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(
            l.points
                .iter()
                .map(|p| Circle::new((p.0, p.1 * k), 3, color.filled())),
        )?;
    }
    if let Some(s) = supply {
        let over = lines
            .iter()
            .flat_map(|l| l.points.iter())
            .filter(|p| s.limit_at(p.0).is_some_and(|lim| p.1 > lim));
        chart.draw_series(over.map(|p| Cross::new((p.0, p.1 * k), 7, RED.stroke_width(2))))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}

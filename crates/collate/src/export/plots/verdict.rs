//! The two verdict plots above the answer: the node's swing against the
//! duty period, one line per mode and per mitigation, against the
//! `[grid]`'s dynamic range limit (`plots/verdict_swing`); and the
//! excursion envelope against the `[supply]` (`plots/verdict_envelope`,
//! drawn in [`super::excursion`]).

use super::Chart;
use super::draw::{DrawResult, both};
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::envelope::Envelope;
use powerlab_analysis::grid::{GridMetrics, Metric};
use powerlab_analysis::summary::base_label;
use powerlab_analysis::summary::{RepeatStats, RungSummary};
use powerlab_rundir::{Mode, PhaseKind, PlotFile, RungInfo};
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// Which line of the verdict plots a duty rung belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Line {
    /// The plain wave in one mode.
    Plain(Mode),
    /// A mitigation (its label, `floor60`) in one mode.
    Mitigation {
        /// [`powerlab_core::smoothing::SmoothingSpec::label`].
        label: String,
        /// The rung's mode.
        mode: Mode,
    },
}

impl Line {
    /// The line of `rung`: a mitigation where it ran one, else its mode.
    pub fn of(rung: &RungInfo) -> Line {
        match rung.smoothing.filter(|_| rung.smoothed()) {
            Some(s) => Line::Mitigation {
                label: s.label(),
                mode: rung.mode,
            },
            None => Line::Plain(rung.mode),
        }
    }

    /// The line in words, as the legend names it.
    pub fn name(&self) -> String {
        match self {
            Line::Plain(m) => mode_words(*m).to_string(),
            Line::Mitigation { label, mode } => {
                format!("mitigation {label}, {}", mode_words(*mode))
            }
        }
    }

    /// Its colour: red in phase, blue staggered, a mitigation from a
    /// palette by its order `i` among the mitigations.
    pub(super) fn color(&self, i: usize) -> RGBColor {
        const MITIGATIONS: [RGBColor; 5] = [
            RGBColor(30, 150, 60),
            RGBColor(150, 60, 180),
            RGBColor(220, 130, 0),
            RGBColor(0, 150, 160),
            RGBColor(120, 90, 40),
        ];
        match self {
            Line::Plain(Mode::InPhase) => RGBColor(200, 40, 40),
            Line::Plain(Mode::Staggered) => RGBColor(20, 90, 200),
            Line::Mitigation { .. } => MITIGATIONS[i % MITIGATIONS.len()],
        }
    }
}

/// A mode as the legends write it.
pub(super) fn mode_words(m: Mode) -> &'static str {
    match m {
        Mode::InPhase => "in phase",
        Mode::Staggered => "staggered",
    }
}

/// One point of a swing line: a configuration's swing and its 95 %
/// interval (of its one rung's composed cycle, or across its repeats).
#[derive(Debug, Clone, PartialEq)]
pub struct SwingPoint {
    /// The period the campaign asked for, ms.
    pub period_ms: f64,
    /// p90 − p10 of the node, W (the mean over repeats where there are
    /// several).
    pub swing_w: f64,
    /// The interval's lower end, W (None: not stated).
    pub lo_w: Option<f64>,
    /// The interval's upper end, W.
    pub hi_w: Option<f64>,
}

/// What the swing plot draws as its limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SwingLimit {
    /// The `[grid]`'s dynamic range limit at the node, W.
    Declared(f64),
    /// A `[grid]` without a dynamic range limit in W.
    NotInGrid,
    /// No `[grid]` table.
    NoGrid,
}

impl SwingLimit {
    /// The limit `grid` declares for the node's dynamic range, as the
    /// grid figures are judged against it.
    pub fn of(grid: &GridMetrics) -> SwingLimit {
        match (&grid.spec, grid.limit_of(Metric::DynamicRange)) {
            (None, _) => SwingLimit::NoGrid,
            (Some(_), None) => SwingLimit::NotInGrid,
            (Some(_), Some(w)) => SwingLimit::Declared(w),
        }
    }

    /// The limit in words, for a caption.
    pub fn words(self) -> String {
        match self {
            SwingLimit::Declared(w) => {
                format!("dashed: [grid] dynamic range limit {w:.0} W (max − min)")
            }
            SwingLimit::NotInGrid => "[grid] declares no dynamic range limit in W".into(),
            SwingLimit::NoGrid => "no [grid] limit declared".into(),
        }
    }
}

/// Every duty rung's swing grouped into lines ([`Line`]), each line's
/// points by period; lines in order (plain in phase, staggered, then the
/// mitigations by label). A configuration run more than once takes the
/// mean over its repeats with that mean's 95 % half-width.
pub fn swing_lines(rungs: &[RungSummary], repeats: &[RepeatStats]) -> Vec<(Line, Vec<SwingPoint>)> {
    // One group per configuration: its line, base label and period.
    let mut groups: Vec<(Line, String, f64, Vec<&RungSummary>)> = Vec::new();
    for r in rungs.iter().filter(|r| r.rung.kind == PhaseKind::Duty) {
        let (Some(period), Some(_)) = (r.rung.requested_period_ms(), r.swing_w) else {
            continue;
        };
        let key = (Line::of(&r.rung), base_label(r), period.ms());
        match groups
            .iter_mut()
            .find(|g| g.0 == key.0 && g.1 == key.1 && g.2 == key.2)
        {
            Some(g) => g.3.push(r),
            None => groups.push((key.0, key.1, key.2, vec![r])),
        }
    }
    let mut lines: Vec<(Line, Vec<SwingPoint>)> = Vec::new();
    for (line, label, period_ms, g) in groups {
        let point = swing_point(&label, period_ms, &g, repeats);
        match lines.iter_mut().find(|l| l.0 == line) {
            Some(l) => l.1.push(point),
            None => lines.push((line, vec![point])),
        }
    }
    for l in &mut lines {
        l.1.sort_by(|a, b| a.period_ms.total_cmp(&b.period_ms));
    }
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    lines
}

/// One configuration's point: its rung's swing and interval, or the
/// repeats' mean ± 95 % half-width (`repeats`, found by base label).
fn swing_point(
    label: &str,
    period_ms: f64,
    g: &[&RungSummary],
    repeats: &[RepeatStats],
) -> SwingPoint {
    let across = repeats.iter().find(|s| {
        s.label == label && s.period_ms == Some(period_ms) && s.n > 1 && s.swing_w.is_some()
    });
    match across.filter(|_| g.len() > 1) {
        Some(s) => {
            let w = s.swing_w.unwrap_or(0.0);
            let h = s.swing_w_ci95;
            SwingPoint {
                period_ms,
                swing_w: w,
                lo_w: h.map(|h| w - h),
                hi_w: h.map(|h| w + h),
            }
        }
        None => {
            let r = g[0];
            SwingPoint {
                period_ms,
                swing_w: r.swing_w.unwrap_or(0.0),
                lo_w: r.swing_ci95.map(|b| b.lo),
                hi_w: r.swing_ci95.map(|b| b.hi),
            }
        }
    }
}

/// Whether the swing plot has anything to show: a duty rung with a swing.
pub fn has_swing_plot(rungs: &[RungSummary]) -> bool {
    rungs.iter().any(|r| {
        r.rung.kind == PhaseKind::Duty
            && r.rung.requested_period_ms().is_some()
            && r.swing_w.is_some()
    })
}

/// Whether the envelope plot has anything to show: a rung with a figure.
pub fn has_envelope_plot(envelope: &Envelope) -> bool {
    envelope
        .rungs
        .iter()
        .any(|r| r.points.iter().any(|p| p.max_mean_w.is_some()))
}

/// The swing plot's lines and limit.
pub(super) struct SwingChart {
    pub(super) lines: Vec<(Line, Vec<SwingPoint>)>,
    pub(super) limit: SwingLimit,
}

/// Writes the verdict plots (each where it has something to show).
///
/// # Errors
///
/// Returns [`CollateError::Plot`] naming the file when a chart cannot be
/// drawn or its SVG or PNG written.
pub fn write_verdict_plots(
    rungs: &[RungSummary],
    repeats: &[RepeatStats],
    envelope: &Envelope,
    grid: &GridMetrics,
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = Vec::new();
    if has_swing_plot(rungs) {
        let chart = SwingChart {
            lines: swing_lines(rungs, repeats),
            limit: SwingLimit::of(grid),
        };
        files.extend(both(
            &PlotFile::VerdictSwing.stem_in(dir),
            (900, 480),
            &Chart::VerdictSwing(&chart),
        )?);
    }
    if has_envelope_plot(envelope) {
        files.extend(both(
            &PlotFile::VerdictEnvelope.stem_in(dir),
            (900, 480),
            &Chart::VerdictEnvelope(envelope, rungs),
        )?);
    }
    Ok(files)
}

/// The node's swing against the period: a line per mode and mitigation,
/// every point with its 95 % interval, and the `[grid]` limit.
pub(super) fn swing_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &SwingChart,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let points = || c.lines.iter().flat_map(|l| l.1.iter());
    let pmin = points().map(|p| p.period_ms).fold(f64::INFINITY, f64::min);
    let pmax = points().map(|p| p.period_ms).fold(0.0, f64::max);
    let (pmin, pmax) = if pmin.is_finite() {
        (pmin / 1.5, pmax.max(pmin * 2.0) * 1.5)
    } else {
        (1.0, 10.0)
    };
    let limit_w = match c.limit {
        SwingLimit::Declared(w) => w,
        _ => 0.0,
    };
    let top = points()
        .map(|p| p.hi_w.unwrap_or(p.swing_w).max(p.swing_w))
        .fold(limit_w, f64::max)
        .max(1.0)
        // Headroom for the legend, a line each, above the data.
        * (1.15 + 0.07 * (c.lines.len() + 1) as f64);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("node swing (p90 − p10) vs period — {}", c.limit.words()),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((pmin..pmax).log_scale(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("duty period (ms, log)")
        .y_desc("node swing (W), 95 % interval")
        .x_labels(6)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 12))
        .draw()?;
    if let SwingLimit::Declared(w) = c.limit {
        let grey = RGBColor(60, 60, 60);
        chart
            .draw_series(DashedLineSeries::new(
                [(pmin, w), (pmax, w)],
                8,
                5,
                grey.stroke_width(2),
            ))?
            .label(format!("[grid] dynamic range limit {w:.0} W"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    }
    let mut mitigations = 0;
    for (line, pts) in &c.lines {
        let color = line.color(mitigations);
        if matches!(line, Line::Mitigation { .. }) {
            mitigations += 1;
        }
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.period_ms, p.swing_w)),
                color.stroke_width(2),
            ))?
            .label(line.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(
            pts.iter()
                .map(|p| Circle::new((p.period_ms, p.swing_w), 4, color.filled())),
        )?;
        chart.draw_series(pts.iter().filter_map(|p| {
            let (lo, hi) = (p.lo_w?, p.hi_w?);
            Some(PathElement::new(
                vec![(p.period_ms, lo), (p.period_ms, hi)],
                color.stroke_width(1),
            ))
        }))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_analysis::cycle::Bounds;
    use powerlab_analysis::summary::repeat_stats;
    use powerlab_core::smoothing::SmoothingSpec;
    use powerlab_core::units::PeriodMs;

    /// A duty rung: `label` (repeat `repeat`), `mode`, `period_ms`, its
    /// swing ± 10 W, and a mitigation's floor (0: none asked; None: no
    /// smoothing at all).
    fn rung(
        label: &str,
        repeat: u32,
        mode: Mode,
        period_ms: f64,
        swing_w: f64,
        floor: Option<f64>,
    ) -> RungSummary {
        let mut r = powerlab_analysis::summary::fixture::summary(Some(period_ms));
        r.rung.label = format!("{label}/r{repeat}");
        r.rung.repeat = repeat;
        r.rung.mode = mode;
        r.rung.period_ms = Some(PeriodMs(period_ms));
        r.rung.smoothing = floor.map(|f| SmoothingSpec {
            floor_pct: f,
            ..SmoothingSpec::default()
        });
        r.swing_w = Some(swing_w);
        r.swing_ci95 = Some(Bounds {
            lo: swing_w - 10.0,
            hi: swing_w + 10.0,
            centre: swing_w,
        });
        r
    }

    #[test]
    fn lines_per_mode_and_mitigation_with_the_repeats_interval() {
        let rungs = vec![
            rung(
                "sweep/p100ms/in_phase",
                1,
                Mode::InPhase,
                100.0,
                1000.0,
                None,
            ),
            rung(
                "sweep/p100ms/in_phase",
                2,
                Mode::InPhase,
                100.0,
                1100.0,
                None,
            ),
            rung(
                "sweep/p500ms/staggered",
                1,
                Mode::Staggered,
                500.0,
                200.0,
                None,
            ),
            // An empty smoothing is the plain wave.
            rung(
                "m/p500ms/plain/in_phase",
                1,
                Mode::InPhase,
                500.0,
                990.0,
                Some(0.0),
            ),
            rung(
                "m/p500ms/floor60/in_phase",
                1,
                Mode::InPhase,
                500.0,
                400.0,
                Some(60.0),
            ),
            rung(
                "m/p500ms/floor60/staggered",
                1,
                Mode::Staggered,
                500.0,
                100.0,
                Some(60.0),
            ),
        ];
        let lines = swing_lines(&rungs, &repeat_stats(&rungs));
        let names: Vec<String> = lines.iter().map(|l| l.0.name()).collect();
        assert_eq!(
            names,
            [
                "in phase",
                "staggered",
                "mitigation floor60, in phase",
                "mitigation floor60, staggered"
            ]
        );
        let in_phase = &lines[0].1;
        assert_eq!(in_phase.len(), 2, "{in_phase:?}");
        // Two repeats: their mean, with the mean's 95 % half-width.
        let p = &in_phase[0];
        assert_eq!((p.period_ms, p.swing_w), (100.0, 1050.0));
        let (lo, hi) = (p.lo_w.unwrap(), p.hi_w.unwrap());
        assert!(
            lo < 1000.0 && hi > 1100.0 && (hi + lo - 2100.0).abs() < 1e-9,
            "{p:?}"
        );
        // One rung: its own interval.
        assert_eq!(
            (in_phase[1].swing_w, in_phase[1].lo_w, in_phase[1].hi_w),
            (990.0, Some(980.0), Some(1000.0))
        );
        assert_eq!(lines[2].1[0].swing_w, 400.0);
        assert_eq!(lines[3].1[0].swing_w, 100.0);
    }

    #[test]
    fn the_limit_is_the_grids_or_says_there_is_none() {
        let mut grid = GridMetrics {
            spec: None,
            band_hz: powerlab_campaign::DEFAULT_BAND_HZ,
            gpus: 8,
            rungs: Vec::new(),
        };
        assert_eq!(SwingLimit::of(&grid), SwingLimit::NoGrid);
        assert!(
            SwingLimit::of(&grid)
                .words()
                .contains("no [grid] limit declared")
        );
        let spec: powerlab_campaign::Grid =
            serde_json::from_str(r#"{"max_dynamic_range_pct": 40}"#).unwrap();
        grid.spec = Some(spec.clone());
        assert_eq!(SwingLimit::of(&grid), SwingLimit::NotInGrid);
        grid.spec = Some(powerlab_campaign::Grid {
            max_dynamic_range_pct: None,
            max_dynamic_range_w: Some(2500.0),
            ..spec
        });
        assert_eq!(SwingLimit::of(&grid), SwingLimit::Declared(2500.0));
    }
}

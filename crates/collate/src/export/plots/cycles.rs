//! The duty rungs across periods and modes: the node's spread against
//! the duty period (`plots/spread_vs_period`), and in phase vs staggered
//! side by side (`plots/in_phase_vs_staggered`).

use super::draw::DrawResult;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use powerlab_analysis::summary::{PhaseCompare, RepeatStats};
use powerlab_rundir::{Mode, PhaseKind};

/// The node's spread (p99 − p1) against the duty period, in phase and
/// staggered, composed and as NVML sampled it.
pub(super) fn spread_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    repeats: &[RepeatStats],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let duty: Vec<&RepeatStats> = repeats
        .iter()
        .filter(|r| r.kind == PhaseKind::Duty && r.period_ms.is_some() && !r.smoothed)
        .collect();
    let pmin = duty
        .iter()
        .filter_map(|r| r.period_ms)
        .fold(f64::INFINITY, f64::min);
    let pmax = duty.iter().filter_map(|r| r.period_ms).fold(0.0, f64::max);
    let smax = duty
        .iter()
        .flat_map(|r| {
            [
                r.spread_w.map(|s| s + r.spread_w_ci95.unwrap_or(0.0)),
                r.raw_spread_w,
            ]
        })
        .flatten()
        .fold(1.0, f64::max);
    let (pmin, pmax) = if pmin.is_finite() {
        (pmin / 1.5, pmax * 1.5)
    } else {
        (1.0, 10.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption("node spread (p99 − p1) vs duty period", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((pmin..pmax).log_scale(), 0f64..smax * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("duty period (ms, log)")
        .y_desc("spread (W)")
        .label_style(("sans-serif", 12))
        .draw()?;
    for (mode, color, faded) in [
        (
            Mode::InPhase,
            RGBColor(200, 40, 40),
            RGBColor(235, 175, 175),
        ),
        (
            Mode::Staggered,
            RGBColor(20, 90, 200),
            RGBColor(170, 195, 235),
        ),
    ] {
        spread_of_mode(&mut chart, &duty, mode, color, faded)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}

/// One mode's lines of the spread chart: what NVML sampled (`faded`),
/// and the composed node cycle's spread with its interval (`color`).
fn spread_of_mode<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<LogCoord<f64>, RangedCoordf64>>,
    duty: &[&RepeatStats],
    mode: Mode,
    color: RGBColor,
    faded: RGBColor,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let mut raw: Vec<(f64, f64)> = duty
        .iter()
        .filter(|r| r.mode == mode)
        .filter_map(|r| Some((r.period_ms?, r.raw_spread_w?)))
        .collect();
    raw.sort_by(|a, b| a.0.total_cmp(&b.0));
    if !raw.is_empty() {
        chart
            .draw_series(LineSeries::new(
                raw.iter().copied(),
                ShapeStyle::from(&faded).stroke_width(1),
            ))?
            .label(format!(
                "{mode}, sample and hold (what NVML sampled; not the node)"
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], faded));
        chart.draw_series(raw.iter().map(|p| Circle::new(*p, 3, faded)))?;
    }
    let mut pts: Vec<(f64, f64, f64)> = duty
        .iter()
        .filter(|r| r.mode == mode)
        .filter_map(|r| Some((r.period_ms?, r.spread_w?, r.spread_w_ci95.unwrap_or(0.0))))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    if pts.is_empty() {
        return Ok(());
    }
    chart
        .draw_series(LineSeries::new(
            pts.iter().map(|p| (p.0, p.1)),
            color.stroke_width(2),
        ))?
        .label(format!("{mode} (composed node cycle)"))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    chart.draw_series(
        pts.iter()
            .map(|p| Circle::new((p.0, p.1), 4, color.filled())),
    )?;
    chart.draw_series(
        pts.iter()
            .filter(|p| p.2 > 0.0)
            .map(|p| PathElement::new(vec![(p.0, p.1 - p.2), (p.0, p.1 + p.2)], color)),
    )?;
    Ok(())
}

/// Mean, peak and spread in phase (red) and staggered (blue), one panel
/// each, one pair of bars per period.
pub(super) fn compare_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    compare: &[PhaseCompare],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let panels = area.split_evenly((1, 3));
    let z = |v: Option<f64>| v.unwrap_or(0.0);
    type Pick = fn(&PhaseCompare) -> (Option<f64>, Option<f64>);
    let metrics: [(&str, Pick); 3] = [
        ("mean (W)", |c| (c.in_phase_mean_w, c.staggered_mean_w)),
        ("peak (W)", |c| (c.in_phase_peak_w, c.staggered_peak_w)),
        ("spread (W)", |c| {
            (c.in_phase_spread_w, c.staggered_spread_w)
        }),
    ];
    for (panel, (name, get)) in panels.iter().zip(metrics) {
        let top = compare
            .iter()
            .map(|c| z(get(c).0).max(z(get(c).1)))
            .fold(1.0, f64::max)
            * 1.15;
        let n = compare.len().max(1) as f64;
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{name}: in phase (red) vs staggered (blue)"),
                ("sans-serif", 14),
            )
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..n, 0f64..top)?;
        let labels: Vec<String> = compare
            .iter()
            .map(|c| format!("{}ms", c.period_ms))
            .collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(compare.len().max(1))
            .x_label_formatter(&|x| labels.get(x.floor() as usize).cloned().unwrap_or_default())
            .label_style(("sans-serif", 11))
            .draw()?;
        for (i, c) in compare.iter().enumerate() {
            let (a, b) = (z(get(c).0), z(get(c).1));
            let x = i as f64;
            chart.draw_series([
                Rectangle::new(
                    [(x + 0.1, 0.0), (x + 0.48, a)],
                    RGBColor(200, 40, 40).filled(),
                ),
                Rectangle::new(
                    [(x + 0.52, 0.0), (x + 0.9, b)],
                    RGBColor(20, 90, 200).filled(),
                ),
            ])?;
        }
    }
    Ok(())
}

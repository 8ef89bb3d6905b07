//! A hand-built prediction of two scenarios written out: every file, the
//! report's order, the scenarios' table and the waveform read back.

use super::super::figures::{self, Estimate, GridInputs, levels};
use super::super::{Prediction, Scenario, VsPlain};
use super::write_prediction;
use polars::prelude::{ParquetReader, SerReader};
use powerlab_analysis::envelope::Envelope;
use powerlab_analysis::grid::GridMetrics;
use powerlab_campaign::{Excursion, Supply};
use powerlab_samples::format::fmt_power_pm;
use std::path::Path;

const RES_MS: f64 = 10.0;

/// 75 % of each 2 s iteration at `hi` W (with a ripple), the rest at `lo`.
fn wave(hi: f64, lo: f64) -> Vec<f64> {
    (0..2000)
        .map(|i| {
            if i % 200 < 150 {
                hi + (i % 7) as f64 * 1e4
            } else {
                lo
            }
        })
        .collect()
}

fn scenario(id: u32, label: &str, w: &[f64], vs_plain: Option<VsPlain>) -> Scenario {
    let lv = levels(w);
    Scenario {
        id,
        label: label.into(),
        profile: label.into(),
        stagger_groups: 1,
        mean_w: Estimate {
            value: lv.mean_w,
            plus_minus: Some(1.5e5),
        },
        swing_w: Estimate {
            value: lv.swing_w(),
            plus_minus: Some(2.5e5),
        },
        spread_w: Estimate {
            value: lv.spread_w(),
            plus_minus: None,
        },
        levels: lv,
        energy_mwh: lv.mean_w * 20.0 / 3600.0 / 1e6,
        sets: 2,
        sets_from: "in_phase".into(),
        sources: vec![
            format!("m/p2000ms/{label}/r1"),
            format!("m/p2000ms/{label}/r2"),
        ],
        vs_plain,
        notes: Vec::new(),
    }
}

/// Two scenarios (`floor60` the schedule's own, then `plain`), a supply
/// its 10 ms excursion limit fails, and `notes`.
fn prediction(notes: Vec<String>) -> Prediction {
    let mut schedule = powerlab_campaign::parse_schedule_str(
        "llm-100k.toml",
        include_str!("../../../../schedules/llm-100k.toml"),
    )
    .unwrap();
    schedule.output.span_s = 20.0;
    schedule.output.resolution_ms = RES_MS;
    schedule.mitigation.profile = Some("floor60".into());
    schedule.supply = Some(Supply {
        rated_w: Some(90e6),
        excursions: vec![
            Excursion {
                duration_ms: 10.0,
                watts: 70e6,
            },
            Excursion {
                duration_ms: 1000.0,
                watts: 95e6,
            },
        ],
    });
    let waves = [("floor60", wave(80e6, 60e6)), ("plain", wave(80e6, 40e6))];
    let vs = VsPlain {
        swing_cut_w: Estimate {
            value: 20e6,
            plus_minus: Some(3e5),
        },
        swing_cut_pct: 50.0,
        extra_mean_w: Estimate {
            value: 5e6,
            plus_minus: Some(2e5),
        },
        extra_energy_mwh: 5e6 * 20.0 / 3600.0 / 1e6,
    };
    let scenarios = vec![
        scenario(0, waves[0].0, &waves[0].1, Some(vs)),
        scenario(1, waves[1].0, &waves[1].1, None),
    ];
    let supply = schedule.supply.clone();
    let band_hz = powerlab_campaign::DEFAULT_BAND_HZ;
    let grids = waves
        .iter()
        .enumerate()
        .map(|(i, (label, w))| {
            let g = GridInputs {
                expected: &w[..200],
                period_ms: 2000.0,
                realized: w,
                resolution_ms: RES_MS,
                source_resolution_ms: 0.5,
                source_highest_hz: 50.0,
                range_pm: Some(1e5),
                edges_cancel: false,
            };
            figures::grid_of(i as u32, label, g, band_hz, schedule.grid.as_ref(), 100_000)
        })
        .collect();
    Prediction {
        title: "llm-100k from a campaign on node-1".into(),
        nodes: 12_500,
        gpus_per_node: 8,
        comm: (
            None,
            "the measured off-phase (no separate communication power)".into(),
        ),
        spread: "normal, σ 2 ms, drawn per node every iteration".into(),
        step_ms: 0.5,
        resolution_ms: RES_MS,
        scenarios,
        spectrum: figures::spectrum(&waves[0].1, RES_MS),
        waveform: waves[0].1.clone(),
        envelope: Envelope {
            rungs: waves
                .iter()
                .enumerate()
                .map(|(i, (l, w))| figures::envelope_of(i as u32, l, w, RES_MS, supply.as_ref()))
                .collect(),
            supply,
            sample_window_ms: RES_MS,
        },
        grid: GridMetrics {
            spec: schedule.grid.clone(),
            band_hz,
            gpus: 100_000,
            rungs: grids,
        },
        modes: None,
        lifecycle: None,
        grid_system: None,
        schedule,
        notes,
    }
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

const NOTE: &str = "EXTRAPOLATED: the 2000 ms iteration is outside the measured periods";

#[test]
fn every_file_is_written_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("prediction");
    let files = write_prediction(&prediction(vec![NOTE.into()]), &dir).unwrap();
    for name in [
        "waveform.parquet",
        "spectrum.csv",
        "scenarios.csv",
        "envelope.csv",
        "grid.csv",
        "plots/waveform.svg",
        "plots/waveform.png",
        "plots/verdict_envelope.svg",
        "plots/verdict_envelope.png",
        "report.md",
        "report.html",
    ] {
        let path = dir.join(name);
        assert!(path.is_file(), "{name} missing");
        assert!(files.contains(&path), "{name} not named in {files:?}");
    }
    let html = read(&dir, "report.html");
    assert!(
        html.matches("<svg").count() >= 2,
        "the plots are not inlined"
    );
    assert!(!html.contains("class=\"missing-plot\""));
    let envelope = read(&dir, "envelope.csv");
    assert!(
        envelope.starts_with("rung_id,label,window_ms"),
        "{envelope}"
    );
    assert!(envelope.contains(",floor60,") && envelope.contains(",plain,"));
}

#[test]
fn the_report_opens_with_the_notes_then_the_plots_then_the_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let p = prediction(vec![NOTE.into()]);
    write_prediction(&p, tmp.path()).unwrap();
    let md = read(tmp.path(), "report.md");
    let mut lines = md.lines().filter(|l| !l.trim().is_empty());
    assert_eq!(
        lines.next(),
        Some("# Prediction: llm-100k from a campaign on node-1")
    );
    assert_eq!(lines.next(), Some("**Read first:**"));
    assert_eq!(lines.next(), Some(format!("- {NOTE}").as_str()));
    // The plots above the answer, as the run report's verdict plots.
    assert!(lines.next().is_some_and(|l| l.starts_with("![")));
    assert!(lines.next().is_some_and(|l| l.starts_with("![")));
    // Then the verdict table (issue 49), then the answer.
    assert_eq!(
        lines.next(),
        Some("| spec item | limit | figure (95 %) | margin | verdict | set by |")
    );
    let table: Vec<&str> = lines
        .by_ref()
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .collect();
    // take_while took the paragraph under the table, what it judges.
    assert!(
        md.contains("\nThe job's predicted power (100000 GPUs"),
        "{md}"
    );
    assert_eq!(lines.next(), Some("## The answer"));
    let row = |item: &str| {
        *table
            .iter()
            .find(|r| r.starts_with(&format!("| {item}")))
            .unwrap_or_else(|| panic!("no {item} row: {table:?}"))
    };
    // The 10 ms limit (70 MW) is under the 80 MW compute phase.
    let excursion = row("Supply excursion");
    assert!(
        excursion.contains("**✘ fail**") && excursion.contains("`floor60`"),
        "{excursion}"
    );
    let ramp = row("Ramp up");
    assert!(
        ramp.contains("| 10.000 MW/s | ≥ 1602.400 MW/s |") && ramp.contains("**✘ fail**"),
        "{ramp}"
    );
    let answer = md.find("## The answer").unwrap();
    let first_plot = md.find("![").unwrap();
    assert!(first_plot < answer);
    let after = answer + md[answer..].find("\n## ").unwrap_or(md.len() - answer);
    let head = &md[answer..after];
    let h = &p.scenarios[0];
    let mean = fmt_power_pm(h.mean_w.value, h.mean_w.plus_minus);
    assert!(mean.ends_with(" MW") && mean.contains(" ± "), "{mean}");
    assert!(head.contains(&format!("mean **{mean}**")), "{head}");
    assert!(head.contains("100000 GPUs in 12500 nodes of 8"), "{head}");
    // The headline's own cost against plain is in its mitigation line;
    // it has no line of its own among the other scenarios'.
    assert!(head.contains("cut +20.000 ± 0.300 MW, 50 %"), "{head}");
    assert!(!head.contains("- **Mitigations, `floor60`**"), "{head}");
    for section in [
        "## Scenarios",
        "## Excursion envelope",
        "## Grid metrics",
        "## Spectrum",
        "## Schedule",
        "## How this was built",
    ] {
        assert!(md[after..].contains(section), "{section} missing");
    }
}

#[test]
fn without_notes_the_plots_and_the_answer_follow_the_title() {
    let tmp = tempfile::tempdir().unwrap();
    write_prediction(&prediction(Vec::new()), tmp.path()).unwrap();
    let md = read(tmp.path(), "report.md");
    let mut lines = md.lines().filter(|l| !l.trim().is_empty());
    lines.next();
    assert!(lines.next().is_some_and(|l| l.starts_with("![")));
    assert!(lines.next().is_some_and(|l| l.starts_with("![")));
    assert!(lines.next().is_some_and(|l| l.starts_with("| spec item |")));
    assert_eq!(lines.find(|l| l.starts_with("## ")), Some("## The answer"));
    assert!(!md.contains("Read first"));
}

#[test]
fn scenarios_csv_has_a_row_per_scenario_and_empty_cells_for_none() {
    let tmp = tempfile::tempdir().unwrap();
    let p = prediction(Vec::new());
    write_prediction(&p, tmp.path()).unwrap();
    let mut r = csv::Reader::from_path(tmp.path().join("scenarios.csv")).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "id",
            "label",
            "profile",
            "stagger_groups",
            "mean_w",
            "mean_pm_w",
            "swing_w",
            "swing_pm_w",
            "spread_w",
            "spread_pm_w",
            "peak_w",
            "min_w",
            "p1_w",
            "p10_w",
            "p90_w",
            "p99_w",
            "energy_mwh",
            "sets",
            "sets_from",
            "sources",
            "swing_cut_w",
            "swing_cut_pm_w",
            "swing_cut_pct",
            "extra_mean_w",
            "extra_mean_pm_w",
            "extra_energy_mwh",
            "notes"
        ]
    );
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), p.scenarios.len());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(&rows[0][col("label")], "floor60");
    assert_eq!(
        &rows[0][col("sources")],
        "m/p2000ms/floor60/r1;m/p2000ms/floor60/r2"
    );
    assert_eq!(rows[0][col("swing_cut_w")].parse::<f64>().unwrap(), 20e6);
    assert_eq!(&rows[0][col("spread_pm_w")], "");
    assert_eq!(&rows[1][col("swing_cut_w")], "");
    assert_eq!(&rows[1][col("extra_energy_mwh")], "");
    let spectrum = read(tmp.path(), "spectrum.csv");
    assert!(
        spectrum.starts_with("lo_hz,hi_hz,share_pct,rms_w\n"),
        "{spectrum}"
    );
    assert_eq!(spectrum.lines().count(), p.spectrum.len() + 1);
}

/// Issue 49: a small job's energies were written `0.000 MWh`. The report
/// writes each at its scale (Wh, kWh, MWh, GWh) with the unit in the cell;
/// `scenarios.csv` keeps MWh, its values as they are.
#[test]
fn the_reports_energies_carry_their_scale_and_the_csv_keeps_mwh() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = prediction(Vec::new());
    // 8 GPUs at about 4 kW over 60 s; floor60 draws 880 W more.
    p.scenarios[0].energy_mwh = 81.5e-6;
    p.scenarios[1].energy_mwh = 0.066_8e-3;
    if let Some(v) = p.scenarios[0].vs_plain.as_mut() {
        v.extra_energy_mwh = 14.7e-6;
    }
    write_prediction(&p, tmp.path()).unwrap();
    let md = read(tmp.path(), "report.md");
    assert!(!md.contains("MWh"), "{md}");
    assert!(md.contains("| lowest | energy | sets |"), "{md}");
    assert!(md.contains("; 81.5 Wh."), "{md}");
    assert!(md.contains("energy +14.7 Wh over the 20 s"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| 1 | plain |") && l.contains("| 66.8 Wh |")),
        "{md}"
    );
    let mut r = csv::Reader::from_path(tmp.path().join("scenarios.csv")).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows[0][col("energy_mwh")].parse::<f64>().unwrap(), 81.5e-6);
    assert_eq!(
        rows[0][col("extra_energy_mwh")].parse::<f64>().unwrap(),
        14.7e-6
    );
    // 75 MW over 20 s is 416.8 kWh; a longer or larger job's in MWh and
    // GWh, three decimals.
    let mut big = prediction(Vec::new());
    big.scenarios[0].energy_mwh = 8.883;
    big.scenarios[1].energy_mwh = 1234.0;
    let dir = tmp.path().join("big");
    write_prediction(&big, &dir).unwrap();
    let md = read(&dir, "report.md");
    assert!(
        md.contains("; 8.883 MWh.") && md.contains("| 1.234 GWh |"),
        "{md}"
    );
    assert!(md.contains("energy +27.8 kWh over the 20 s"), "{md}");
}

#[test]
fn the_waveform_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let p = prediction(Vec::new());
    write_prediction(&p, tmp.path()).unwrap();
    let file = std::fs::File::open(tmp.path().join("waveform.parquet")).unwrap();
    let df = ParquetReader::new(file).finish().unwrap();
    assert_eq!(df.height(), p.waveform.len());
    let w: Vec<f64> = df
        .column("power_w")
        .unwrap()
        .f64()
        .unwrap()
        .into_no_null_iter()
        .collect();
    assert_eq!(w, p.waveform);
    let t: Vec<f64> = df
        .column("t_s")
        .unwrap()
        .f64()
        .unwrap()
        .into_no_null_iter()
        .collect();
    assert_eq!(t[0], 0.0);
    assert!((t[1] - RES_MS / 1000.0).abs() < 1e-12);
}

#[test]
fn grid_modes_are_written_only_where_declared() {
    use powerlab_campaign::GridMode;
    let tmp = tempfile::tempdir().unwrap();
    let plain_dir = tmp.path().join("plain");
    write_prediction(&prediction(Vec::new()), &plain_dir).unwrap();
    assert!(!plain_dir.join("modes.csv").exists());
    assert!(!read(&plain_dir, "report.md").contains("## Grid modes"));

    let mut p = prediction(Vec::new());
    let modes = [
        GridMode {
            name: "inter-area".into(),
            hz: 0.5,
            bandwidth_hz: None,
            damping_ratio: Some(0.05),
        },
        GridMode {
            name: "plant".into(),
            hz: 1.3,
            bandwidth_hz: Some(0.1),
            damping_ratio: None,
        },
    ];
    // One 2 s iteration of the headline, 10 ms apart.
    let one = &p.waveform[..200];
    p.modes = powerlab_analysis::grid::modes::mode_study(one, RES_MS, &modes, 5.0);
    let dir = tmp.path().join("modes");
    let files = write_prediction(&p, &dir).unwrap();
    assert!(files.contains(&dir.join("modes.csv")));
    let csv = read(&dir, "modes.csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "mode,hz,band_lo_hz,band_hi_hz,harmonics_in_band,forcing_mw,flagged,nearest_harmonic_hz,nearest_amplitude_mw,gap_hz,unresolved_above_hz"
        )
    );
    let inter = lines.next().unwrap();
    assert!(
        inter.starts_with("inter-area,0.5,0.475,0.525,1,"),
        "{inter}"
    );
    assert!(inter.ends_with(",true,,,,"), "{inter}");
    let plant = lines.next().unwrap();
    assert!(
        plant.starts_with("plant,1.3,1.25,1.35,,0.0,false,1.5,"),
        "{plant}"
    );
    let md = read(&dir, "report.md");
    let at = md.find("## Grid modes").unwrap();
    assert!(md.find("## Grid metrics").unwrap() < at);
    let section = &md[at..];
    assert!(section.contains("**⚠ in band**") && section.contains("| clear |"));
    assert!(section.contains("Retuning within ± 5 %: an iteration of "));
    assert!(section.contains("half-bandwidths from every mode"));
    // The forcing's ± is the headline swing's relative ±.
    let f = &p.modes.as_ref().unwrap().modes[0];
    let s = p.scenarios[0].swing_w;
    let cell = fmt_power_pm(
        f.forcing_mw * 1e6,
        s.plus_minus.map(|pm| pm / s.value * f.forcing_mw * 1e6),
    );
    assert!(section.contains(&cell), "{cell} not in {section}");
}

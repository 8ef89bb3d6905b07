//! A prediction's `report.md`: the title, what the reader must know first
//! (the prediction's notes), the plots (above the answer, as the run
//! report's verdict plots), the answer ([`super::answer`]), then the tables ([`super::sections`]), the schedule and how the
//! prediction was built.

use super::super::Prediction;
use super::{answer, modes, sections};
use powerlab_collate::render::text;
use powerlab_rundir::{PlotFile, ReportFile};
use powerlab_samples::error::CollateError;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// How a prediction is built, in words (the report's last section).
pub const HOW_BUILT: &str = "Each GPU follows the run's measured cycles (the mean of the run's GPUs, each at its own rising edge), spliced at the target period and compute fraction from the measured rise and fall, blended in log-period between the nearest measured periods. Every iteration each node's offset is drawn from the spread (and the stragglers' delay), and the GPUs are summed as drawn. The ± is half the range over the sets of measured repeats, with the measured cycles' own 95 % intervals in quadrature. Without a `[lifecycle]` the job's start, checkpoints, crashes and end are not modelled; with one they are placed from the run's measured edges (a cold start, a held context's fall and rise, a kill, a clean exit): each edge gives when the GPUs change state, the running job's waveform their draw (see Lifecycle).";

/// The whole of `report.md` for `p`.
pub fn report_markdown(p: &Prediction) -> String {
    let mut s = format!("# Prediction: {}\n", text(&p.title));
    read_first(&mut s, &p.notes);
    figures(&mut s, p);
    super::verdicts::write(&mut s, p);
    answer::write_answer(&mut s, p);
    sections::scenarios(&mut s, p);
    sections::envelope(&mut s, p);
    sections::grid(&mut s, p);
    modes::section(&mut s, p);
    super::study::section(&mut s, p);
    super::grid_section::section(&mut s, p);
    sections::spectrum(&mut s, p);
    sections::schedule(&mut s, p);
    let _ = writeln!(s, "\n## How this was built\n\n{HOW_BUILT}");
    s
}

/// Writes `dir/report.md`.
///
/// # Errors
///
/// [`CollateError::Io`] when the file cannot be written.
pub fn write_report(p: &Prediction, dir: &Path) -> Result<PathBuf, CollateError> {
    let path = dir.join(ReportFile::ReportMd.file_name());
    std::fs::write(&path, report_markdown(p)).map_err(|e| CollateError::io(&path, e))?;
    Ok(path)
}

/// Appends the notes as a bold "Read first" list (nothing without notes).
fn read_first(s: &mut String, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n**Read first:**\n");
    for n in notes {
        let _ = writeln!(s, "- {n}");
    }
}

/// Appends the plots: the waveform, and the envelope where it has one.
fn figures(s: &mut String, p: &Prediction) {
    let _ = writeln!(
        s,
        "\n![The headline scenario's job power over its first iterations, MW](plots/{}.svg)",
        powerlab_collate::render::WAVEFORM_STEM
    );
    if powerlab_collate::render::has_envelope_plot(&p.envelope) {
        let _ = writeln!(
            s,
            "\n![Highest mean job power over each window, every scenario, against the supply]({})",
            PlotFile::VerdictEnvelope.svg_link()
        );
    }
}

//! `compare.md`: B against A for a person. What differs between the runs
//! themselves comes first, then the verdict and what counts as a
//! regression, the node's rungs, the unmatched rungs, the GPUs (flagged
//! ones in the open, every row folded) and the idle health captures.

use super::cells::{code, o, text};
use crate::compare::Comparison;
use crate::compare::delta::Delta;
use crate::compare::rungs::FigureDelta;
use std::fmt::Write as _;

/// A signed difference in W and %.
fn change(d: &Delta) -> String {
    match (d.delta_w, d.delta_pct) {
        (Some(w), Some(p)) => format!("{w:+.1} W ({p:+.1} %)"),
        (Some(w), None) => format!("{w:+.1} W"),
        _ => "–".into(),
    }
}

/// The flag cell of a figure (`incomplete`: of a rung with incomplete raw data).
fn flag(f: &FigureDelta, incomplete: bool) -> String {
    let cell = if f.regression {
        "**REGRESSION**"
    } else if f.uncomparable() {
        "not comparable"
    } else if f.judged {
        ""
    } else {
        "not judged"
    };
    match (incomplete, cell.is_empty()) {
        (false, _) => cell.into(),
        (true, true) => "⚠ incomplete data".into(),
        (true, false) => format!("{cell}, ⚠ incomplete data"),
    }
}

/// Repeats of A and B, "a/b".
fn repeats(d: &Delta) -> String {
    format!("{}/{}", d.n_a, d.n_b)
}

/// The whole comparison as Markdown.
pub fn markdown(c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Comparison: B against A\n");
    runs(&mut s, c);
    verdict(&mut s, c);
    node_rungs(&mut s, c);
    unmatched_rungs(&mut s, c);
    gpus(&mut s, c);
    health(&mut s, c);
    s
}

/// The two runs (A the baseline, B the candidate), and every warning on
/// what differs between them.
fn runs(s: &mut String, c: &Comparison) {
    for (name, role, f) in [("A", "baseline", &c.a), ("B", "candidate", &c.b)] {
        let _ = writeln!(
            s,
            "- **{name}** ({role}): `{}` — campaign `{}`, node `{}`, {} × {} ({}), started {}, {}; report {}",
            code(&f.dir),
            code(&f.campaign),
            code(&f.node),
            f.gpus,
            text(&f.gpu_models.join(" + ")),
            f.backend,
            f.started_utc,
            f.status,
            f.report
        );
    }
    s.push('\n');
    for w in &c.warnings {
        let _ = writeln!(s, "> **⚠ {w}**\n");
    }
}

/// The verdict, what was not compared, and what counts as a regression.
fn verdict(s: &mut String, c: &Comparison) {
    let uncomparable = c
        .rungs
        .iter()
        .flat_map(|r| &r.figures)
        .chain(c.gpus.iter().flat_map(|g| &g.figures))
        .filter(|f| f.uncomparable())
        .count();
    let also = match (uncomparable, c.unmatched_rungs.len()) {
        (0, 0) => String::new(),
        (u, m) => format!(
            " Not compared: {u} judged figure(s) without a value in one run, {m} rung label(s) in one run only."
        ),
    };
    let node_flags = c.rungs.iter().filter(|r| r.regressed()).count();
    let gpu_flags = c.gpus.iter().filter(|g| g.regressed()).count();
    if c.regressions == 0 {
        let _ = writeln!(
            s,
            "**Verdict: no regression** beyond {} % in {} matched rung(s) and {} GPU-rung(s).{also}\n",
            c.threshold_pct,
            c.rungs.len(),
            c.gpus.len()
        );
    } else {
        let _ = writeln!(
            s,
            "**Verdict: REGRESSION** — {} figure(s) changed beyond {} %, in {node_flags} node rung(s) and {gpu_flags} GPU-rung(s).{also}\n",
            c.regressions, c.threshold_pct
        );
    }
    let _ = writeln!(
        s,
        "What counts as a regression: a rung's mean or peak, a duty rung's swing (p90 − p10), or a GPU's mean, changing (B − A, either direction) by more than {} % of A's value and, where both runs have two repeats or more, by more than the half-width of the 95 % Welch interval of the difference. Spread (p99 − p1), a GPU's peak and a constant-load rung's swing are shown, not judged (noise band). GPU board power only.\n",
        c.threshold_pct
    );
}

/// "Node, per rung": every judged and shown figure of every matched rung,
/// and the rungs' notes.
fn node_rungs(s: &mut String, c: &Comparison) {
    let _ = writeln!(s, "## Node, per rung\n");
    if c.rungs.is_empty() {
        let _ = writeln!(s, "No rung label is in both runs.\n");
    } else {
        let _ = writeln!(
            s,
            "| rung | figure | repeats A/B | A (W) | B (W) | B − A | interval | flag |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
        for r in &c.rungs {
            for f in &r.figures {
                let d = &f.delta;
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} |",
                    text(&r.label),
                    f.figure,
                    repeats(d),
                    o(d.a_w),
                    o(d.b_w),
                    change(d),
                    d.interval,
                    flag(f, r.incomplete_data)
                );
            }
        }
        s.push('\n');
        let noted: Vec<_> = c.rungs.iter().filter(|r| !r.notes.is_empty()).collect();
        if !noted.is_empty() {
            let _ = writeln!(s, "Notes:\n");
            for r in noted {
                for n in &r.notes {
                    let _ = writeln!(s, "- {}: {n}", text(&r.label));
                }
            }
            s.push('\n');
        }
    }
}

/// "Unmatched rungs": the labels in one run only.
fn unmatched_rungs(s: &mut String, c: &Comparison) {
    let _ = writeln!(s, "## Unmatched rungs\n");
    if c.unmatched_rungs.is_empty() {
        let _ = writeln!(s, "None: every rung label is in both runs.\n");
    } else {
        for u in &c.unmatched_rungs {
            let _ = writeln!(
                s,
                "- `{}`: only in {} ({} repeat(s)), not compared",
                code(&u.label),
                u.only_in,
                u.repeats
            );
        }
        s.push('\n');
    }
}

/// "Health": what changed between the runs' idle captures.
fn health(s: &mut String, c: &Comparison) {
    let _ = writeln!(s, "## Health (idle captures)\n");
    let _ = writeln!(s, "{}.\n", c.health.state);
    for l in &c.health.lines {
        let _ = writeln!(s, "- `{}`", code(l));
    }
    if !c.health.lines.is_empty() {
        s.push('\n');
    }
}

/// "Per GPU": how GPUs were matched, the flagged GPU-rungs in the open and
/// every row folded.
fn gpus(s: &mut String, c: &Comparison) {
    let m = &c.gpu_matching;
    let _ = writeln!(s, "## Per GPU\n");
    let _ = writeln!(s, "GPUs matched by **{}**: {}.\n", m.by, m.why);
    if m.by == "position" {
        for p in &m.pairs {
            let _ = writeln!(
                s,
                "- A {} ({}) ↔ B {} ({})",
                text(&p.gpu_a),
                text(&p.uuid_a),
                text(&p.gpu_b),
                text(&p.uuid_b)
            );
        }
        s.push('\n');
    }
    for u in &m.unmatched {
        let _ = writeln!(s, "- no partner: {}", text(u));
    }
    if !m.unmatched.is_empty() {
        s.push('\n');
    }
    if c.gpus.is_empty() {
        let _ = writeln!(s, "No per-GPU rows to compare.\n");
        return;
    }
    let header = "| rung | GPU A ↔ B | repeats A/B | mean A (W) | mean B (W) | mean B − A | interval | peak B − A | flag |\n|---|---|---|---|---|---|---|---|---|";
    let line = |g: &crate::compare::gpus::GpuDelta| {
        let mean = &g.figures[0];
        let peak = g
            .figures
            .get(1)
            .map(|f| change(&f.delta))
            .unwrap_or_default();
        let d = &mean.delta;
        let gpu = if g.pair.gpu_a == g.pair.gpu_b && m.by == "uuid" {
            text(&g.pair.gpu_a)
        } else {
            format!("{} ↔ {}", text(&g.pair.gpu_a), text(&g.pair.gpu_b))
        };
        format!(
            "| {} | {gpu} | {} | {} | {} | {} | {} | {peak} | {} |",
            text(&g.label),
            repeats(d),
            o(d.a_w),
            o(d.b_w),
            change(d),
            d.interval,
            flag(mean, false)
        )
    };
    let flagged: Vec<_> = c.gpus.iter().filter(|g| g.regressed()).collect();
    if flagged.is_empty() {
        let _ = writeln!(s, "No GPU's mean changed beyond {} %.\n", c.threshold_pct);
    } else {
        let _ = writeln!(
            s,
            "{} GPU-rung(s) changed beyond {} %:\n",
            flagged.len(),
            c.threshold_pct
        );
        let _ = writeln!(s, "{header}");
        for g in flagged {
            let _ = writeln!(s, "{}", line(g));
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "<details><summary>Every GPU in every matched rung ({} rows; also compare.csv)</summary>\n",
        c.gpus.len()
    );
    let _ = writeln!(s, "{header}");
    for g in &c.gpus {
        let _ = writeln!(s, "{}", line(g));
    }
    let _ = writeln!(s, "\n</details>\n");
}

//! The user's consent to what a campaign reaches outside the harness: the
//! programs it starts (workload commands, node power commands, the IPMI
//! tool), the addresses it reads and the secrets it sends. A campaign is
//! code; `run` and `preflight` start none of it until the user says so,
//! with `--allow-programs` or a yes typed on a terminal that was shown the
//! list. A password file is read only when `--secret-file` names it.

use powerlab_campaign::Campaign;
use powerlab_campaign::reach::{self, Reach};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// What the user said on the command line.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// `--allow-programs`.
    pub allow_programs: bool,
    /// `--secret-file` paths.
    pub secret_files: Vec<PathBuf>,
}

/// What a run of `c` would start: its workload commands when they run
/// (`workloads`), its node power sources when they are read (`sources`).
pub fn needed(c: &Campaign, workloads: bool, sources: bool) -> Vec<Reach> {
    let mut out = Vec::new();
    if workloads {
        out.extend(reach::workloads(c));
    }
    if sources {
        out.extend(reach::node_power(c));
    }
    out
}

/// Whether `list` may start: every password file named by
/// `--secret-file`, and the user's yes (`--allow-programs`, or typed on a
/// terminal). `verb` says what would start (`run`, `preflight`).
///
/// # Errors
/// The refusal, in words that show the list and say what to do.
pub fn ask(list: &[Reach], given: &Given, verb: &str) -> Result<(), String> {
    let undeclared: Vec<&str> = list
        .iter()
        .flat_map(Reach::secret_files)
        .filter(|f| !declared(f, &given.secret_files))
        .collect();
    if let Some(f) = undeclared.first() {
        return Err(format!(
            "the campaign reads a password from the file {}, which --secret-file does not name: a campaign reads only the secret files the user names for it; add --secret-file {} if that file is meant for this source (nothing was started or read)",
            reach::quoted(f),
            powerlab_core::words::shown(f)
        ));
    }
    let Some(heading) = reach::heading(list) else {
        return Ok(());
    };
    let listing: Vec<String> = reach::lines(list)
        .into_iter()
        .map(|l| format!("  {l}"))
        .collect();
    if given.allow_programs {
        errln!("--allow-programs: {verb} starts what the campaign names:");
        for l in &listing {
            errln!("{l}");
        }
        return Ok(());
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        errln!("{heading}");
        for l in &listing {
            errln!("{l}");
        }
        if typed_yes(&format!("{verb}: start these? [y/N] ")) {
            return Ok(());
        }
        return Err(format!(
            "{verb}: not started (no yes was typed); nothing the campaign names was run or read"
        ));
    }
    Err(format!(
        "{heading}\n{}\n{verb}: refused: the campaign starts programs or reads addresses and secrets, and nothing consented to it. Read the list above (and docs/campaigns.md, \"Running someone else's campaign\"), then run again with --allow-programs; nothing was started or read",
        listing.join("\n")
    ))
}

/// Whether `file` is one of the `--secret-file` paths (as written, or the
/// same file once both are resolved).
fn declared(file: &str, given: &[PathBuf]) -> bool {
    let p = Path::new(file);
    let canon = std::fs::canonicalize(p).ok();
    given
        .iter()
        .any(|g| g.as_path() == p || (canon.is_some() && std::fs::canonicalize(g).ok() == canon))
}

fn typed_yes(prompt: &str) -> bool {
    let mut err = std::io::stderr();
    let _ = write!(err, "{prompt}");
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

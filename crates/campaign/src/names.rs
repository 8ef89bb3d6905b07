//! Names a campaign file gives (the campaign, its phases): what they may
//! be made of, how long they may be, and the phase names the planner keeps
//! for the rungs it inserts itself.
//!
//! A rung's label is its phase name followed by `/`-separated parts (the
//! period, the mode, the NCCL step, the repeat, `no-context`), and the
//! reports print names in Markdown tables and in HTML. A name is therefore
//! held to ASCII letters, digits, `-`, `_` and `.`, starting with a letter
//! or a digit: no `/` (a phase could otherwise reproduce another rung's
//! label), no control character (a newline would break a table row), no
//! markup (`<`, `>`, `&`, `|`, `#`, `` ` ``, `*`, …).

use crate::model::{CALIBRATION_PHASE, PhaseKind};
use crate::plan::RAMP_UP_PHASE;

/// Longest campaign or phase name, characters (a run directory's name
/// holds the campaign name and a time stamp, well inside any file system's
/// 255-byte limit).
pub const MAX_NAME_CHARS: usize = 64;

/// What a name may be made of, as error messages state it.
pub const NAME_ALLOWED: &str = "1 to 64 ASCII letters, digits, '-', '_' and '.', starting with a letter or a digit (no '/', spaces, control characters or markup)";

/// Phase names the planner gives to the rungs it inserts (the calibration
/// rungs, the ramp-up steps): a phase of the file may not take them.
pub const RESERVED_PHASE_NAMES: [&str; 2] = [CALIBRATION_PHASE, RAMP_UP_PHASE];

/// The names of the phase kinds, which name a phase of that kind only.
const KIND_NAMES: [PhaseKind; 6] = [
    PhaseKind::Idle,
    PhaseKind::Sustained,
    PhaseKind::Duty,
    PhaseKind::Nccl,
    PhaseKind::Soak,
    PhaseKind::RampUp,
];

/// Why `name` cannot name a campaign or a phase, if it cannot: empty,
/// longer than [`MAX_NAME_CHARS`], or made of more than [`NAME_ALLOWED`].
pub fn name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars == 0 {
        return Some("a name must not be empty".into());
    }
    if chars > MAX_NAME_CHARS {
        return Some(format!(
            "the name is {chars} characters long, longer than {MAX_NAME_CHARS}"
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Some(format!("{name:?} does not start with a letter or a digit"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        let what = match bad {
            '/' => "'/' separates the parts of a rung's label".to_string(),
            c if c.is_control() => format!("the control character {c:?}"),
            c => format!("{c:?}"),
        };
        return Some(format!("{name:?} holds {what}"));
    }
    None
}

/// Why a phase of kind `kind` cannot be named `name`, if it cannot: a name
/// the planner keeps for its own rungs, or the name of another phase kind.
pub fn reserved_problem(name: &str, kind: PhaseKind) -> Option<String> {
    if RESERVED_PHASE_NAMES
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name))
    {
        return Some(format!(
            "`{name}` is the phase name of rungs the planner inserts itself"
        ));
    }
    KIND_NAMES
        .iter()
        .find(|k| k.as_str().eq_ignore_ascii_case(name) && **k != kind)
        .map(|k| {
            format!(
                "`{name}` is the name of a phase kind: only a `{}` phase may take it, and this one is `{}`",
                k.as_str(),
                kind.as_str()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass_and_the_rest_say_why() {
        for ok in ["sweep", "idle-0", "h200_sweep.v2", "A", "9"] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
        let long = "a".repeat(MAX_NAME_CHARS + 1);
        for (bad, says) in [
            ("", "empty"),
            ("sweep/p500ms/in_phase", "'/'"),
            ("a\nb", "control character"),
            ("<script>", "start"),
            ("a<b", "'<'"),
            ("a|b", "'|'"),
            ("a#b", "'#'"),
            ("a b", "' '"),
            ("a`b", "'`'"),
            ("é", "start"),
            (".hidden", "start"),
            (long.as_str(), "65 characters"),
        ] {
            let p = name_problem(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert!(p.contains(says), "{bad:?}: {p}");
        }
        assert!(reserved_problem("rampup", PhaseKind::Duty).is_some());
        assert!(reserved_problem("calibration", PhaseKind::Duty).is_some());
        // Case is no way around it (hostile review).
        assert!(reserved_problem("RampUp", PhaseKind::Duty).is_some());
        assert!(reserved_problem("Calibration", PhaseKind::Duty).is_some());
        assert!(reserved_problem("IDLE", PhaseKind::Duty).is_some());
        assert!(reserved_problem("idle", PhaseKind::Sustained).is_some());
        assert_eq!(reserved_problem("idle", PhaseKind::Idle), None);
        assert_eq!(reserved_problem("sweep", PhaseKind::Duty), None);
    }
}

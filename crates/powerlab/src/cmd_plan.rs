//! `validate` and `plan`.

use crate::cli::{PlanArgs, ValidateArgs};
use anyhow::Result;
use powerlab_campaign::{Campaign, load_file, plan, reach};
use powerlab_core::select::GpuSelector;

pub fn validate(a: &ValidateArgs) -> Result<i32> {
    if a.json {
        let (v, code) = match load_file(&a.file) {
            Ok(c) => (
                serde_json::json!({
                    "file": a.file.display().to_string(),
                    "ok": true,
                    "name": c.name,
                    "phases": c.phases.len(),
                    "reaches": reach::reaches(&c),
                }),
                0,
            ),
            Err(e) => (
                serde_json::json!({
                    "file": a.file.display().to_string(),
                    "ok": false,
                    "error": e.to_string(),
                }),
                crate::exit::ERROR,
            ),
        };
        outln!("{v}");
        return Ok(code);
    }
    match load_file(&a.file) {
        Ok(c) => {
            outln!(
                "{}: ok — campaign `{}`, {} phases",
                a.file.display(),
                c.name,
                c.phases.len()
            );
            print_reaches(&c);
            Ok(0)
        }
        Err(e) => {
            errln!("{e}");
            Ok(crate::exit::ERROR)
        }
    }
}

/// The GPU count a campaign that selects "all" is planned for without `--gpus`.
const ASSUMED_GPUS: usize = 8;

pub fn plan(a: &PlanArgs) -> Result<i32> {
    let c = match load_file(&a.file) {
        Ok(c) => c,
        Err(e) => {
            errln!("{e}");
            return Ok(crate::exit::ERROR);
        }
    };
    let n = c.gpus.count(a.gpus.unwrap_or(ASSUMED_GPUS));
    let assumed = c.gpus == GpuSelector::All && a.gpus.is_none();
    if let (GpuSelector::List(l), Some(g)) = (&c.gpus, a.gpus)
        && g != l.len()
    {
        errln!(
            "note: --gpus {g} is not used: the campaign names its {} GPU(s) in `gpus`",
            l.len()
        );
    }
    match plan::expand(&c, n, a.repeats) {
        Ok(p) if a.json => {
            let mut v = serde_json::to_value(&p)?;
            if let Some(o) = v.as_object_mut() {
                // Whether gpu_count is the count assumed for "all" (no --gpus).
                o.insert("gpu_count_assumed".into(), assumed.into());
                // The disk the run directory needs, file by file.
                o.insert("reaches".into(), serde_json::to_value(reach::reaches(&c))?);
                o.insert(
                    "disk".into(),
                    serde_json::to_value(powerlab_campaign::disk::estimate(&c, &p))?,
                );
            }
            outln!("{}", serde_json::to_string_pretty(&v)?);
            Ok(0)
        }
        Ok(p) => {
            let table = plan::render(&p);
            let (head, rest) = table.split_once('\n').unwrap_or((&table, ""));
            outln!("{head}");
            if assumed {
                outln!(
                    "note: gpus = \"all\" is planned for {ASSUMED_GPUS} GPUs here (plan does not look at the machine; --gpus N for this node's count)"
                );
            }
            // The disk the run needs, just before the closing total.
            let (body, total) = match rest.trim_end().rsplit_once('\n') {
                Some((body, last)) if last.starts_with("total:") => (format!("{body}\n"), last),
                _ => (rest.to_string(), ""),
            };
            out!("{body}");
            outln!(
                "disk: the run directory needs {}",
                powerlab_campaign::disk::estimate(&c, &p).describe()
            );
            if !total.is_empty() {
                outln!("{total}");
            }
            print_reaches(&c);
            Ok(0)
        }
        Err(e) => {
            errln!("{}: {}", a.file.display(), e.message);
            if let Some(allowed) = e.allowed {
                errln!("  allowed: {allowed}");
            }
            Ok(crate::exit::ERROR)
        }
    }
}

/// Every program, address and secret source the campaign names, each
/// string escaped (a control character cannot disguise a command).
fn print_reaches(c: &Campaign) {
    let list = reach::reaches(c);
    if let Some(h) = reach::heading(&list) {
        outln!("{h}");
        for l in reach::lines(&list) {
            outln!("  {l}");
        }
    }
}

//! The order of `events.jsonl`'s records: each written once per run or
//! per rung, and in time order ([`RecordOrder`]).

use super::{DEVICE_CLOCK_TOPIC, RunEvent, RungInfo, SMOOTHING_TOPIC, STOPPED_IN_RUNG_TOPIC};

/// What the run writes once per run or per rung, and in time order, as
/// read so far from an event log: a record repeated (a duplicated line
/// made a rung a second repeat of itself, with a 0 W interval) or out of
/// order is refused, as a row listed twice in `edges.csv` is.
///
/// The run's driver writes `run_started` first, then for each rung a
/// `barrier`, its `rung_started` and its `rung_ended`, and `run_ended`
/// last, every one stamped from the one run clock as it writes it: their
/// `ts_ns` never go back. Faults and interlocks are stamped where they were
/// seen and written later, and notes carry their own times: their `ts_ns`
/// are not checked; a rung's `device_clock`, `smoothing` and
/// `stopped_in_rung` note is written once. A rung whose `rung_started` is
/// missing (lost from the log) is not refused here: the collator names it.
#[derive(Debug, Default)]
pub struct RecordOrder {
    /// The first record's line and event name.
    first: Option<(usize, &'static str)>,
    /// The `run_started` line.
    run_started: Option<usize>,
    /// The `run_ended` line.
    run_ended: Option<usize>,
    /// Each rung's `barrier` line.
    barriers: std::collections::HashMap<u32, usize>,
    /// Each rung's `rung_started` line.
    started: std::collections::HashMap<u32, usize>,
    /// Each rung's `rung_ended` line.
    ended: std::collections::HashMap<u32, usize>,
    /// Each (topic, rung) note's line, for the notes written once per rung.
    notes: std::collections::HashMap<(String, u64), usize>,
    /// The last time-ordered record: its line, `ts_ns` and event name.
    last: Option<(usize, i64, &'static str)>,
}

/// What to do about a record the run wrote once, found again.
const DUPLICATE: &str = "the line was copied: remove it (the samples are untouched), or restore events.jsonl from the original run directory";
/// What to do about a record out of the run's order.
const MOVED: &str = "lines were moved or edited: put them back in the order the run wrote them, or restore events.jsonl from the original run directory";

/// Notes the run writes once per rung (`detail.rung_id`).
const ONCE_PER_RUNG: [&str; 3] = [DEVICE_CLOCK_TOPIC, SMOOTHING_TOPIC, STOPPED_IN_RUNG_TOPIC];

impl RecordOrder {
    /// Takes record `e` of line `line` (1-based) after those already
    /// taken.
    ///
    /// # Errors
    ///
    /// What is wrong with it, in words, ending with what to do: a second
    /// `run_started` or `run_started` after another record; a second
    /// `run_ended`; a rung's `barrier`, `rung_started` or `rung_ended`
    /// repeated, or one of them after a later one of the same rung (or
    /// after `run_ended`); a once-per-rung note repeated; a `ts_ns` of
    /// these records earlier than the previous one's.
    pub fn check(&mut self, line: usize, e: &RunEvent) -> Result<(), String> {
        let name = e.name();
        let first = *self.first.get_or_insert((line, name));
        match e {
            RunEvent::RunStarted { .. } => {
                if let Some(at) = self.run_started {
                    return Err(format!(
                        "a second `run_started` (the first is line {at}): a run starts once; {DUPLICATE}"
                    ));
                }
                if first.0 != line {
                    return Err(format!(
                        "`run_started` after line {}'s `{}`: the run writes it first; {MOVED}",
                        first.0, first.1
                    ));
                }
                self.run_started = Some(line);
            }
            RunEvent::RunEnded { .. } => {
                if let Some(at) = self.run_ended {
                    return Err(format!(
                        "a second `run_ended` (the first is line {at}): a run ends once; {DUPLICATE}"
                    ));
                }
                self.run_ended = Some(line);
            }
            RunEvent::Barrier { rung_id, .. } => self.barrier(line, *rung_id)?,
            RunEvent::RungStarted {
                rung,
                epoch_ns,
                measure_from_ns,
                end_ns,
                ..
            } => {
                self.rung_started(line, rung)?;
                window_in_order(rung, *epoch_ns, *measure_from_ns, *end_ns)?;
            }
            RunEvent::RungEnded { rung_id, .. } => self.rung_ended(line, *rung_id)?,
            RunEvent::Note { topic, detail, .. } => return self.note(line, topic, detail),
            RunEvent::Fault { .. } | RunEvent::Interlock { .. } => return Ok(()),
        }
        self.in_time(line, e.ts_ns(), name)
    }

    /// A structural record after `run_ended` is out of order.
    fn after_the_end(&self, what: &str) -> Result<(), String> {
        match self.run_ended {
            Some(at) => Err(format!(
                "{what} after the run ended (line {at}): copied or moved there; remove it, or restore events.jsonl from the original run directory"
            )),
            None => Ok(()),
        }
    }

    /// Rung `id`'s barrier: once, before the rung starts.
    fn barrier(&mut self, line: usize, id: u32) -> Result<(), String> {
        self.after_the_end(&format!("a `barrier` of rung {id}"))?;
        if let Some(at) = self.barriers.get(&id) {
            return Err(format!(
                "a second `barrier` of rung {id} (the first is line {at}): each rung has one; {DUPLICATE}"
            ));
        }
        if let Some(at) = self.started.get(&id).or_else(|| self.ended.get(&id)) {
            return Err(format!(
                "a `barrier` of rung {id} after the rung started (line {at}): out of order; {MOVED}"
            ));
        }
        self.barriers.insert(id, line);
        Ok(())
    }

    /// Rung `rung` starts: once, before it ends.
    fn rung_started(&mut self, line: usize, rung: &RungInfo) -> Result<(), String> {
        let (id, label) = (rung.id, &rung.label);
        self.after_the_end(&format!("rung {id} (`{label}`) starts"))?;
        if let Some(at) = self.started.get(&id) {
            return Err(format!(
                "rung {id} (`{label}`) starts a second time (its `rung_started` is line {at}): a duplicated record would count the rung as a repeat of itself; {DUPLICATE}"
            ));
        }
        if let Some(at) = self.ended.get(&id) {
            return Err(format!(
                "rung {id} (`{label}`) starts after its `rung_ended` (line {at}): out of order; {MOVED}"
            ));
        }
        self.started.insert(id, line);
        Ok(())
    }

    /// Rung `id` ends: once (its start may be missing: lost from the log).
    fn rung_ended(&mut self, line: usize, id: u32) -> Result<(), String> {
        self.after_the_end(&format!("a `rung_ended` of rung {id}"))?;
        if let Some(at) = self.ended.get(&id) {
            return Err(format!(
                "rung {id} ends a second time (its `rung_ended` is line {at}); {DUPLICATE}"
            ));
        }
        self.ended.insert(id, line);
        Ok(())
    }

    /// A note written once per rung appears once.
    fn note(&mut self, line: usize, topic: &str, detail: &serde_json::Value) -> Result<(), String> {
        let Some(id) = detail.get("rung_id").and_then(serde_json::Value::as_u64) else {
            return Ok(());
        };
        if !ONCE_PER_RUNG.contains(&topic) {
            return Ok(());
        }
        if let Some(at) = self.notes.insert((topic.to_string(), id), line) {
            return Err(format!(
                "a second `{topic}` note of rung {id} (the first is line {at}): the run writes one; {DUPLICATE}"
            ));
        }
        Ok(())
    }

    /// The time-ordered records' `ts_ns` never go back.
    fn in_time(&mut self, line: usize, ts_ns: i64, name: &'static str) -> Result<(), String> {
        if let Some((at, prev, what)) = self.last
            && ts_ns < prev
        {
            return Err(format!(
                "`{name}` at ts_ns {ts_ns}, earlier than line {at}'s `{what}` at {prev}: the run writes these records in time order: {MOVED}"
            ));
        }
        self.last = Some((line, ts_ns, name));
        Ok(())
    }
}

/// A rung's window as the runner writes it: the epoch (its barrier) no
/// later than the measured window's start, which is no later than its
/// end. A digit lost from one of them reads as a window of minus 58
/// years, which the collator would fold as a rung of no cycles.
fn window_in_order(
    rung: &RungInfo,
    epoch_ns: i64,
    from_ns: i64,
    end_ns: i64,
) -> Result<(), String> {
    if epoch_ns <= from_ns && from_ns <= end_ns {
        return Ok(());
    }
    Err(format!(
        "rung {} (`{}`) has epoch_ns {epoch_ns}, measure_from_ns {from_ns} and end_ns {end_ns}, which the runner writes in that order: the record was damaged (a digit lost or changed); restore events.jsonl from the original run directory",
        rung.id, rung.label
    ))
}

#[cfg(test)]
mod tests {
    use super::super::read_events;

    /// The lines of a run of two rungs as the driver writes them: a fault
    /// seen during rung 0 written after its end (stamped earlier), a
    /// device-clock note per rung.
    fn run_lines() -> Vec<String> {
        let rung = |id: u32| {
            format!(
                r#"{{"id":{id},"label":"d/p500ms/r{id}","phase":"d","kind":"duty","mode":"in_phase","period_ms":500.0,"duty":0.5,"repeat":1,"repeats":1}}"#
            )
        };
        let mut out = vec![
            r#"{"event":"run_started","ts_ns":100,"campaign":"c","backend":"sim","rungs":2}"#
                .to_string(),
        ];
        for (id, t) in [(0u32, 1000i64), (1, 5000)] {
            out.push(format!(r#"{{"event":"barrier","ts_ns":{t},"rung_id":{id},"ready":[],"epoch_ns":{},"lead_ns":10}}"#, t + 10));
            out.push(format!(r#"{{"event":"rung_started","ts_ns":{t},"rung":{},"epoch_ns":{},"measure_from_ns":{},"end_ns":{},"offsets_ns":[0],"gpus":["gpu0"]}}"#, rung(id), t + 10, t + 20, t + 3000));
            out.push(format!(r#"{{"event":"note","ts_ns":{},"topic":"device_clock","detail":{{"rung_id":{id},"gpus":[]}}}}"#, t + 3001));
            out.push(format!(r#"{{"event":"rung_ended","ts_ns":{},"rung_id":{id},"start_error_ns":[0],"barrier_ok":true}}"#, t + 3002));
        }
        out.insert(
            6,
            r#"{"event":"fault","ts_ns":2000,"gpu":"gpu0","kind":"k","detail":"d","fatal":false}"#
                .into(),
        );
        out.push(r#"{"event":"run_ended","ts_ns":9000,"status":"complete","reason":null}"#.into());
        out
    }

    /// An edit of a run's lines: one record copied or moved.
    type Edit = fn(&mut Vec<String>);

    /// Records repeated or out of order: (edit, the line named, what the
    /// message says).
    fn out_of_order_cases() -> [(&'static str, Edit, usize, &'static str); 9] {
        [
            (
                "a digit lost from end_ns",
                |l| l[2] = l[2].replace(r#""end_ns":4000"#, r#""end_ns":400"#),
                3,
                "which the runner writes in that order",
            ),
            (
                "rung_started duplicated",
                |l| {
                    let x = l[2].clone();
                    l.insert(3, x)
                },
                4,
                "starts a second time",
            ),
            (
                "rung_started appended",
                |l| {
                    let x = l[7].clone();
                    l.push(x)
                },
                12,
                "starts after the run ended (line 11)",
            ),
            (
                "rung_ended duplicated",
                |l| {
                    let x = l[4].clone();
                    l.insert(5, x)
                },
                6,
                "ends a second time",
            ),
            (
                "rung_ended before its start",
                |l| l.swap(2, 4),
                5,
                "starts after its `rung_ended` (line 3)",
            ),
            (
                "run_started twice",
                |l| {
                    let x = l[0].clone();
                    l.insert(1, x)
                },
                2,
                "a second `run_started`",
            ),
            (
                "a rung moved before another",
                |l| {
                    let x: Vec<String> = l.drain(5..10).collect();
                    l.splice(1..1, x);
                },
                7,
                "earlier than line 6's `rung_ended`",
            ),
            (
                "barrier duplicated",
                |l| {
                    let x = l[1].clone();
                    l.insert(2, x)
                },
                3,
                "a second `barrier` of rung 0",
            ),
            (
                "note duplicated",
                |l| {
                    let x = l[3].clone();
                    l.insert(4, x)
                },
                5,
                "a second `device_clock` note of rung 0",
            ),
        ]
    }

    /// Issue 45, defect 9: a duplicated `rung_started` (a fake repeat of
    /// the rung, with a 0 W interval) was read as a second rung; now it,
    /// and every other record repeated or out of order, is refused naming
    /// the file and the line, with what to do.
    #[test]
    fn a_duplicated_or_out_of_order_record_is_refused_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let lines = run_lines();
        // As the run writes it: read whole; and with rung 0's start lost.
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        assert_eq!(read_events(&path).unwrap().len(), lines.len());
        let mut lost = lines.clone();
        lost.remove(2);
        std::fs::write(&path, lost.join("\n") + "\n").unwrap();
        assert_eq!(read_events(&path).unwrap().len(), lines.len() - 1);
        for (name, edit, line, says) in out_of_order_cases() {
            let mut l = lines.clone();
            edit(&mut l);
            std::fs::write(&path, l.join("\n") + "\n").unwrap();
            let err = read_events(&path).unwrap_err().to_string();
            assert!(err.contains("events.jsonl"), "{name}: {err}");
            assert!(err.contains(&format!("line {line}:")), "{name}: {err}");
            assert!(err.contains(says), "{name}: {err}");
            assert!(err.contains("restore events.jsonl"), "{name}: {err}");
        }
    }
}

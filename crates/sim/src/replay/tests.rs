#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking

use super::*;
use play::LOOKAHEAD_NS;
use powerlab_core::RunClock;
use powerlab_core::hw::{Backend, GpuSchedule, PowerSource};
use powerlab_core::shape::LoadShape;

const T0: i64 = 1_800_000_000_000_000_000;
const MS: i64 = NS_PER_MS;

/// An observe-style recording of `keys` on node `n1`: every 20 ms an
/// instant reading and a buffered sample 5 ms older, every 100 ms the
/// average field, every 200 ms the status (the power limit among it).
fn text(keys: &[&str], polls: i64) -> String {
    let mut s = format!("{}\n", HEADER.join(","));
    for k in 0..polls {
        let t = T0 + k * 20 * MS;
        for key in keys {
            s += &format!("{t},n1,{key},instant_w,{}\n", 100 + k);
            s += &format!("{},n1,{key},buffered_w,{}.5\n", t - 5 * MS, 200 + k);
            if k % 5 == 0 {
                s += &format!("{t},n1,{key},average_w,150\n");
            }
            if k % 10 == 0 {
                s += &format!("{t},n1,{key},sm_clock_mhz,1980\n{t},n1,{key},power_limit_w,700\n");
            }
        }
    }
    s
}

fn parse(text: &str) -> Result<Recording, HwError> {
    Recording::from_reader(text.as_bytes(), Path::new("rec.csv"))
}

fn refused(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn a_recording_is_grouped_by_gpu_in_key_order_with_every_row_kept() {
    let r = parse(&text(&["gpu10", "gpu2"], 100)).unwrap();
    assert_eq!(r.node(), "n1");
    let keys: Vec<&str> = r.gpus().iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["gpu2", "gpu10"]);
    let g = &r.gpus()[0];
    assert_eq!(
        (
            g.buffered.len(),
            g.instant.len(),
            g.fields.len(),
            g.status.len()
        ),
        (100, 100, 20, 20)
    );
    assert_eq!(g.rows(), 240);
    assert_eq!(g.buffered[3].value, 203.5);
    let ids = r.identities();
    assert_eq!(ids[1].uuid, "RECORDED-gpu10");
    assert_eq!(ids[1].nvml_index, 10);
    assert_eq!(ids[0].name, RECORDED_GPU_NAME);
    assert_eq!(ids[0].power_limit_w, 700.0);
    // From the first instant reading (the buffered sample is 5 ms older)
    // to the last buffered sample.
    assert_eq!(
        r.span(),
        Span {
            start_ns: T0,
            end_ns: T0 + 99 * 20 * MS - 5 * MS
        }
    );
}

#[test]
fn a_damaged_file_is_refused_naming_the_file_and_the_line() {
    let good = text(&["gpu0"], 100);
    let e = refused(&good.replacen("ts_ns,node", "time,node", 1));
    assert!(
        e.contains("rec.csv") && e.contains("line 1") && e.contains("header"),
        "{e}"
    );
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(7, "this is not, a reading");
    let e = refused(&(lines.join("\n") + "\n"));
    assert!(
        e.contains("rec.csv, line 8") && e.contains("five fields"),
        "{e}"
    );
    lines[7] = "12x,n1,gpu0,buffered_w,3";
    let e = refused(&(lines.join("\n") + "\n"));
    assert!(e.contains("line 8") && e.contains("ts_ns `12x`"), "{e}");
    lines[7] = "1800000000000000000,n1,gpu0,watts,3";
    let e = refused(&(lines.join("\n") + "\n"));
    assert!(
        e.contains("line 8") && e.contains("unknown instrument `watts`"),
        "{e}"
    );
    lines[7] = "1800000000000000000,n1,gpu0,buffered_w,inf";
    let e = refused(&(lines.join("\n") + "\n"));
    assert!(
        e.contains("line 8") && e.contains("not a finite number"),
        "{e}"
    );
    lines[7] = "1800000000000000000,n2,gpu0,buffered_w,3";
    let e = refused(&(lines.join("\n") + "\n"));
    assert!(
        e.contains("line 8") && e.contains("node `n2`") && e.contains("`n1`"),
        "{e}"
    );
    let e = refused("");
    assert!(e.contains("empty"), "{e}");
    let e = refused(&format!("{}\n", HEADER.join(",")));
    assert!(e.contains("no readings"), "{e}");
    let e = parse("ts_ns,node,gpu,instrument,value\n\u{0}\u{ff}").map(|_| ());
    assert!(e.is_err());
}

#[test]
fn a_gpu_without_enough_samples_instant_readings_or_a_limit_is_refused() {
    let e = refused(&text(&["gpu0"], 40));
    assert!(e.contains("gpu0 has only 40 buffered_w samples"), "{e}");
    let no_buffered: String = text(&["gpu0"], 100)
        .lines()
        .filter(|l| !l.contains("buffered_w"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = refused(&no_buffered);
    assert!(e.contains("gpu0 has no buffered_w rows"), "{e}");
    let no_limit = text(&["gpu0"], 100).replace("power_limit_w", "gpu_temp_c");
    let e = refused(&no_limit);
    assert!(e.contains("no power_limit_w reading"), "{e}");
    let no_instant = text(&["gpu0"], 100).replace("instant_w", "mem_temp_c");
    let e = refused(&no_instant);
    assert!(e.contains("no instant_w readings"), "{e}");
}

#[test]
fn buffered_samples_may_step_back_a_little_but_not_more() {
    let mut s = text(&["gpu0"], 100);
    // 2 ms before the sample just above it: taken, in order.
    s += &format!("{},n1,gpu0,buffered_w,1\n", T0 + 99 * 20 * MS - 7 * MS);
    let r = parse(&s).unwrap();
    let b = &r.gpus()[0].buffered;
    assert!(b.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    assert_eq!(b.len(), 101);
    s += &format!("{},n1,gpu0,buffered_w,1\n", T0 + 50 * 20 * MS);
    let e = refused(&s);
    assert!(
        e.contains("back in time") && e.contains("before the one on line"),
        "{e}"
    );
}

#[test]
fn a_hole_in_the_instant_readings_is_refused() {
    let s: String = text(&["gpu0"], 200)
        .lines()
        .enumerate()
        .filter(|(i, l)| !(l.contains("instant_w") && (200..400).contains(i)))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let e = refused(&s);
    assert!(e.contains("instant readings stop for"), "{e}");
}

#[test]
fn gpus_whose_readings_barely_overlap_are_refused() {
    let mut s = text(&["gpu0"], 100);
    for line in text(&["gpu1"], 100).lines().skip(1) {
        let (ts, rest) = line.split_once(',').unwrap();
        let ts: i64 = ts.parse().unwrap();
        s += &format!("{},{rest}\n", ts + 1_500 * MS);
    }
    let e = refused(&s);
    assert!(
        e.contains("together for 0.") && e.contains("gpu0, gpu1"),
        "{e}"
    );
}

/// The source of the first GPU of a 100-poll recording, the clock at `T0`.
fn source(text: &str) -> Box<dyn PowerSource> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let r = parse(text).unwrap();
    rt.block_on(async { r.open(RunClock::virtual_at(T0), T0) })
        .sources
        .remove(0)
}

#[test]
fn every_row_is_handed_over_once_when_its_time_has_come() {
    let mut src = source(&text(&["gpu0"], 100));
    let mut buffered = Vec::new();
    let mut instant = Vec::new();
    let mut other = 0;
    let mut now = T0;
    while now < T0 + 2 * NS_PER_S {
        let i = src.read_instant(now).unwrap();
        assert!(i.ts_ns <= now + LOOKAHEAD_NS);
        instant.push(i);
        if (now - T0) % (200 * MS) == 0 {
            for s in src.drain_buffered(now).unwrap() {
                assert!(s.ts_ns <= now);
                buffered.push(s);
            }
        }
        other += src.read_fields(now).unwrap().len() + src.read_status(now).unwrap().len();
        now += 20 * MS;
    }
    buffered.extend(src.drain_buffered(now).unwrap());
    let b: Vec<i64> = buffered.iter().map(|s| s.ts_ns).collect();
    assert_eq!(b.len(), 100);
    assert!(b.windows(2).all(|w| w[0] < w[1]));
    let i: Vec<i64> = instant.iter().map(|s| s.ts_ns).collect();
    assert_eq!(i.len(), 100);
    assert!(i.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(other, 40);
    assert!(src.drain_events(now).is_empty());
}

#[test]
fn an_instant_poll_takes_the_latest_due_and_the_rest_follow_with_the_buffer() {
    let mut src = source(&text(&["gpu0"], 100));
    // Three readings due at once (0, 20 and 40 ms): the latest now.
    let i = src.read_instant(T0 + 45 * MS).unwrap();
    assert_eq!(i.ts_ns, T0 + 40 * MS);
    let drained = src.drain_buffered(T0 + 45 * MS).unwrap();
    let passed: Vec<i64> = drained
        .iter()
        .filter(|s| s.instrument == Instrument::InstantW)
        .map(|s| s.ts_ns)
        .collect();
    assert_eq!(passed, [T0, T0 + 20 * MS]);
    // Just before the next reading: handed over a little early.
    assert_eq!(src.read_instant(T0 + 59 * MS).unwrap().ts_ns, T0 + 60 * MS);
    assert_eq!(src.read_instant(T0 + 61 * MS).unwrap().ts_ns, T0 + 80 * MS);
    // None due and none close: a transient read error, as NVML gives.
    let e = src.read_instant(T0 + 62 * MS).unwrap_err();
    assert!(matches!(e, HwError::Transient { .. }), "{e}");
}

#[test]
fn a_recorded_gpu_is_ready_when_asked_and_waits_out_its_window() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let r = parse(&text(&["gpu0"], 100)).unwrap();
    rt.block_on(async {
        let clock = RunClock::virtual_at(T0);
        let mut node = ReplayBackend::new(r, clock, T0 + 100 * MS).open().unwrap();
        assert_eq!(node.info.backend, "replay");
        let gpu = &mut node.gpus[0];
        let ready = gpu.prepare(0, None).await.unwrap();
        assert_eq!(ready.ready_at_ns, T0 + 100 * MS);
        assert_eq!(ready.arm_latency_ns, 0);
        let schedule = |start, end| GpuSchedule {
            rung_id: 0,
            start_ns: start,
            end_ns: end,
            shape: LoadShape::Workload {
                job: Default::default(),
                origin_ns: start,
            },
        };
        let out = gpu
            .run(&schedule(T0 + 110 * MS, T0 + NS_PER_S))
            .await
            .unwrap();
        assert_eq!(clock.now_ns(), T0 + NS_PER_S);
        assert_eq!(out.edges.len(), 1);
        assert_eq!(out.edges[0].achieved_ns, T0 + 110 * MS);
        // Past the last buffered sample (1.975 s in): refused.
        let e = gpu
            .run(&schedule(T0 + NS_PER_S, T0 + 2 * NS_PER_S))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("beyond gpu0's samples in rec.csv"),
            "{e}"
        );
        gpu.stop().await.unwrap();
    });
}

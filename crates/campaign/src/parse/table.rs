//! The limits of a campaign's values, the phase kinds, the keys each
//! accepts and the range of every numeric phase key, declared once:
//! validation reads them and so do its error messages (the allowed keys
//! of a kind, the range of a value).

use crate::model::{MAX_REPEATS, PhaseKind};

// The limits of a campaign's values (public as `parse::…`).

/// Least duty of a square wave (and least off fraction: 1 − duty), so
/// that each half of the cycle holds samples to fold.
pub const MIN_DUTY: f64 = 0.01;
/// Shortest on or off part of a cycle, ms: the engine switches its load a
/// kernel at a time, and a shorter pulse is not one it can hold.
pub const MIN_PULSE_MS: f64 = 0.5;

/// Shortest rung, s (one 20 ms sampling period would not fit a shorter one).
pub const MIN_DURATION_S: f64 = 0.05;
/// Longest rung, s: one week.
pub const MAX_DURATION_S: f64 = 604_800.0;
/// Longest warm-up or cool-down, s.
pub const MAX_WARMUP_S: f64 = 3_600.0;
/// The temperature limits a campaign may set, °C: below 50 an idle GPU
/// would trip them, above 110 they would not protect anything.
pub const TEMP_LIMIT_RANGE_C: (f64, f64) = (50.0, 110.0);
/// Shortest and longest excursion a `[supply]` table may declare, ms.
pub const EXCURSION_RANGE_MS: (f64, f64) = (1.0, 10_000.0);
/// Most power a `[supply]` figure may state, W (0 excluded): 1 MW.
pub const SUPPLY_W_RANGE: (f64, f64) = (0.0, powerlab_core::units::W_PER_MW);
/// Most periods in one duty phase.
pub const MAX_PERIODS: usize = 1_000;

/// Keys every phase accepts, in the order error messages list them.
pub(super) const COMMON_KEYS: &[&str] = &["kind", "name", "duration_s", "repeats", "cooldown_s"];

/// One phase kind as written in the file.
pub(super) struct KindSpec {
    /// The kind.
    pub(super) kind: PhaseKind,
    /// The keys it accepts beyond [`COMMON_KEYS`], in the order error
    /// messages list them.
    pub(super) keys: &'static [&'static str],
}

/// The kinds a `[[phase]]` may have, in the order error messages list them
/// (the planner's own kinds, such as ramp-up steps, are never written).
pub(super) const KINDS: &[KindSpec] = &[
    KindSpec {
        kind: PhaseKind::Idle,
        keys: &["warmup_s"],
    },
    KindSpec {
        kind: PhaseKind::Sustained,
        keys: &["warmup_s", "mode"],
    },
    KindSpec {
        kind: PhaseKind::Duty,
        keys: &[
            "warmup_s",
            "period_ms",
            "periods_ms",
            "duty",
            "ramp_s",
            "exact_period",
            "mode",
            "modes",
            "stagger_step_deg",
            "offsets_deg",
            "offsets_ms",
            "smoothing",
        ],
    },
    KindSpec {
        kind: PhaseKind::Nccl,
        keys: &[
            "warmup_s",
            "collectives",
            "min_bytes",
            "max_bytes",
            "step_factor",
            "iterations",
            "warmup_iters",
            "sweep_s",
            "fabric_bytes",
            "timeout_s",
            "bsp_compute_ms",
        ],
    },
    KindSpec {
        kind: PhaseKind::Soak,
        keys: &["warmup_s"],
    },
    KindSpec {
        kind: PhaseKind::Workload,
        keys: &[
            "warmup_s",
            "command",
            "iteration_ms",
            "env",
            "cwd",
            "stop_grace_s",
            "stop",
            "sim",
        ],
    },
];

/// The kind written as `name`, if there is one.
pub(super) fn kind_spec(name: &str) -> Option<&'static KindSpec> {
    KINDS.iter().find(|k| k.kind.as_str() == name)
}

/// The kinds' names, for the unknown-kind error.
pub(super) fn kind_names() -> String {
    let names: Vec<&str> = KINDS.iter().map(|k| k.kind.as_str()).collect();
    names.join(", ")
}

/// The modes a phase may run, for errors.
pub(super) const MODES: &str = "in_phase, staggered";

/// A numeric phase key and its range: `lo <= value <= hi` (`lo < value`
/// when `lo_open`).
pub(super) struct Num {
    /// Key in the phase table.
    pub(super) key: &'static str,
    /// Least value.
    pub(super) lo: f64,
    /// Greatest value.
    pub(super) hi: f64,
    /// Whether `lo` itself is refused.
    pub(super) lo_open: bool,
}

const fn closed(key: &'static str, lo: f64, hi: f64) -> Num {
    Num {
        key,
        lo,
        hi,
        lo_open: false,
    }
}

/// Measured window of each rung, s.
pub(super) const DURATION_S: Num = closed("duration_s", MIN_DURATION_S, MAX_DURATION_S);
/// Warm load before the barrier, s.
pub(super) const WARMUP_S: Num = closed("warmup_s", 0.0, MAX_WARMUP_S);
/// Idle after each rung, s.
pub(super) const COOLDOWN_S: Num = closed("cooldown_s", 0.0, MAX_WARMUP_S);
/// Duty ramp at the start of each rung, s.
pub(super) const RAMP_S: Num = closed("ramp_s", 0.0, MAX_DURATION_S);
/// A single duty period, ms: any positive number here, then held to
/// [`PERIOD_RANGE_MS`].
pub(super) const PERIOD_MS: Num = Num {
    key: "period_ms",
    lo: 0.0,
    hi: f64::MAX,
    lo_open: true,
};
/// Every duty period, ms.
pub(super) const PERIOD_RANGE_MS: (f64, f64) = (1.0, 600_000.0);
/// Compute burst of the bulk-synchronous NCCL rung, ms.
pub(super) const BSP_COMPUTE_MS: Num = closed("bsp_compute_ms", 0.01, 600_000.0);
/// Window of the NCCL sweep rung, s.
pub(super) const SWEEP_S: Num = closed("sweep_s", 0.1, 86_400.0);
/// A workload's iteration hint, ms.
pub(super) const ITERATION_MS: Num = closed("iteration_ms", 1.0, 600_000.0);
/// From SIGTERM to SIGKILL at a workload's end, s.
pub(super) const STOP_GRACE_S: Num = closed("stop_grace_s", 0.1, 600.0);
/// Hang timeout of one collective, s.
pub(super) const TIMEOUT_S: Num = closed("timeout_s", 0.1, 86_400.0);

/// A whole-number phase key: `1..=max`.
pub(super) struct Count {
    /// Key in the phase table.
    pub(super) key: &'static str,
    /// Greatest value.
    pub(super) max: i64,
    /// Value when absent (the phase's repeats default to `[defaults]`).
    pub(super) default: u32,
}

/// Repeats of the phase (soaks: once).
pub(super) const REPEATS: Count = Count {
    key: "repeats",
    max: MAX_REPEATS as i64,
    default: 1,
};
/// Timed NCCL iterations per size.
pub(super) const ITERATIONS: Count = Count {
    key: "iterations",
    max: 100_000,
    default: 20,
};
/// Untimed NCCL iterations per size.
pub(super) const WARMUP_ITERS: Count = Count {
    key: "warmup_iters",
    max: 10_000,
    default: 5,
};

/// An NCCL message size key, bytes, in `1..=MAX_MESSAGE_BYTES`.
pub(super) struct Bytes {
    /// Key in the phase table.
    pub(super) key: &'static str,
    /// Value when absent.
    pub(super) default: u64,
}

/// Largest NCCL message, bytes (64 GiB).
pub(super) const MAX_MESSAGE_BYTES: i64 = 1 << 36;
/// Smallest message of the sweep.
pub(super) const MIN_BYTES: Bytes = Bytes {
    key: "min_bytes",
    default: 8,
};
/// Largest message of the sweep.
pub(super) const MAX_BYTES: Bytes = Bytes {
    key: "max_bytes",
    default: 4 << 30,
};
/// All-reduce size of the fabric and bulk-synchronous rungs.
pub(super) const FABRIC_BYTES: Bytes = Bytes {
    key: "fabric_bytes",
    default: 1 << 30,
};
/// Size multipliers between sweep steps.
pub(super) const STEP_FACTORS: [i64; 3] = [2, 4, 8];
/// Size multiplier when absent.
pub(super) const DEFAULT_STEP_FACTOR: u64 = 2;
/// Duty fraction when absent.
pub(super) const DEFAULT_DUTY: f64 = 0.5;
/// Window of the NCCL sweep and hang timeout when absent, s.
pub(super) const DEFAULT_NCCL_S: f64 = 60.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parsed_kind_is_listed_once() {
        assert_eq!(kind_names(), "idle, sustained, duty, nccl, soak, workload");
        assert!(kind_spec("ramp_up").is_none());
        assert_eq!(
            format!("1 ..= {} GiB", MAX_MESSAGE_BYTES >> 30),
            "1 ..= 64 GiB"
        );
    }
}

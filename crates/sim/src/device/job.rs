//! A workload's process on one simulated GPU (a lifecycle rung's): its
//! spawn takes the GPU over (the harness's own context is given up: the
//! job is the only process on it, as on a training node), CUDA
//! initialisation holds the context at the context-held idle for the
//! profile's `job_init_ms` (± `job_init_spread_pct`), then the simulated
//! job runs from its iteration 0. A kill stops its load at once,
//! mid-iteration, and its context with it; its own end finishes the
//! iteration it is in and exits. Either way the GPU falls, with the fall
//! physics, to the bare idle (no context), where it stays until the
//! harness creates its context again (its next `prepare`). Each process
//! is kept for the truth ([`JobTruth`]).

use super::{Demand, SimDevice};
use powerlab_core::training::TrainingSpec;
use powerlab_core::units::{EpochNs, ms_to_ns_f64};

/// How a simulated process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    /// SIGKILL: its load stopped at the signal.
    Kill,
    /// It finished its iteration and exited.
    Exit,
    /// The command that ran beside it exited (`--sim-run-command`).
    Exited,
}

impl JobEnd {
    /// The name in `sim-truth/jobs.csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobEnd::Kill => "kill",
            JobEnd::Exit => "exit",
            JobEnd::Exited => "exited",
        }
    }
}

/// One process as it truly ran on the GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobTruth {
    /// Its spawn.
    pub spawn_ns: EpochNs,
    /// Its first load (spawn + CUDA initialisation).
    pub load_ns: EpochNs,
    /// How and when its load and context ended (None: the run stopped
    /// first).
    pub end: Option<(JobEnd, EpochNs)>,
}

/// A number in [-1, 1] drawn from `seed` and `t` (splitmix64).
fn unit(seed: u64, t: i64) -> f64 {
    let mut x = seed ^ (t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

impl SimDevice {
    /// The process of a lifecycle rung is spawned at `t` to run `spec`.
    pub fn job_spawned(&mut self, t: EpochNs, spec: TrainingSpec) {
        self.advance_to(t);
        let t = t.max(self.t_ns);
        // The harness gives its context up and the job creates its own:
        // the GPU holds a context throughout.
        self.context_from_ns = Some(self.context_from_ns.unwrap_or(t).min(t));
        self.context_until_ns = None;
        let spread = self.profile.job_init_spread_pct.max(0.0) / 100.0;
        let draw = unit(spec.seed ^ self.node_seed.rotate_left(29), t);
        let init_ms = self.profile.job_init_ms.max(0.0) * (1.0 + spread * draw);
        let load_ns = t + ms_to_ns_f64(init_ms).round() as i64;
        self.set_demand(t, Demand::Job { spec, load_ns });
        self.jobs.push(JobTruth {
            spawn_ns: t,
            load_ns,
            end: None,
        });
    }

    /// The running process, if one runs: its spec and first load.
    fn running_job(&self) -> Option<(TrainingSpec, EpochNs)> {
        match self.program.last() {
            Some((_, Demand::Job { spec, load_ns })) => Some((*spec, *load_ns)),
            _ => None,
        }
    }

    /// Whether a workload's process holds the GPU (it draws; the
    /// harness's idle and warm-up leave it be).
    pub fn job_running(&self) -> bool {
        self.running_job().is_some() && self.jobs.last().is_some_and(|j| j.end.is_none())
    }

    /// Its load and its context end at `at` (the GPU falls to the bare
    /// idle), `how`.
    fn end_job(&mut self, at: EpochNs, how: JobEnd) -> EpochNs {
        let at = at.max(self.t_ns);
        self.set_demand(at, Demand::Idle);
        self.context_until_ns = Some(at);
        if let Some(j) = self.jobs.last_mut().filter(|j| j.end.is_none()) {
            j.end = Some((how, at));
        }
        at
    }

    /// SIGKILL at `t`: the load stops at once.
    pub fn job_killed(&mut self, t: EpochNs) {
        self.advance_to(t);
        if self.job_running() {
            self.end_job(t, JobEnd::Kill);
        }
    }

    /// The job's time is up at `t`: it finishes its iteration and exits;
    /// returns when (None: no process runs).
    pub fn job_finish(&mut self, t: EpochNs) -> Option<EpochNs> {
        self.advance_to(t);
        let (spec, load_ns) = self.running_job().filter(|_| self.job_running())?;
        let exit = spec.exit_ns(load_ns, t.max(self.t_ns));
        Some(self.end_job(exit, JobEnd::Exit))
    }

    /// The command that ran beside the simulated job exited at `t`.
    pub fn job_exited(&mut self, t: EpochNs) {
        self.advance_to(t);
        if self.job_running() {
            self.end_job(t, JobEnd::Exited);
        }
    }

    /// Every process this GPU ran.
    pub fn jobs(&self) -> &[JobTruth] {
        &self.jobs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceSetup;
    use crate::faults::GpuFaults;
    use crate::profile::Profile;
    use powerlab_core::units::NS_PER_MS;

    fn device() -> SimDevice {
        SimDevice::new(DeviceSetup {
            profile: Profile::h200(),
            index: 0,
            faults: GpuFaults::default(),
            run_start_ns: 0,
            seed: 3,
            node_seed: 3,
            step_us: 250,
            record_truth: true,
        })
    }

    fn mean_w(d: &SimDevice, from_ms: i64, to_ms: i64) -> f64 {
        d.truth()
            .and_then(|t| t.mean_between(from_ms * NS_PER_MS, to_ms * NS_PER_MS))
            .unwrap_or(f64::NAN)
    }

    #[test]
    fn a_killed_job_falls_to_the_bare_idle_and_an_exit_finishes_its_iteration() {
        let p = Profile::h200();
        let mut d = device();
        d.create_context(0);
        let spec = TrainingSpec {
            compute_fraction: 1.0,
            ..TrainingSpec::default()
        };
        d.job_spawned(1_000 * NS_PER_MS, spec);
        let load = d.jobs()[0].load_ns;
        let init_ms = (load / NS_PER_MS - 1_000) as f64;
        assert!(
            (init_ms - p.job_init_ms).abs() <= 0.1 * p.job_init_ms + 1.0,
            "{init_ms}"
        );
        d.job_killed(3_000 * NS_PER_MS);
        d.advance_to(5_000 * NS_PER_MS);
        // Context-held idle through the initialisation, load, bare idle.
        assert!((mean_w(&d, 1_050, 1_000 + init_ms as i64 - 20) - p.idle_w).abs() < 3.0);
        assert!(mean_w(&d, 2_500, 3_000) > 600.0);
        assert!((mean_w(&d, 3_500, 5_000) - p.bare_idle_w).abs() < 2.0);
        assert!(!d.job_running());
        // The harness takes its context back; a second process exits.
        d.create_context(5_000 * NS_PER_MS);
        d.job_spawned(6_000 * NS_PER_MS, spec);
        let exit = d.job_finish(8_000 * NS_PER_MS).unwrap();
        let (s, l) = (spec, d.jobs()[1].load_ns);
        assert_eq!(exit, s.exit_ns(l, 8_000 * NS_PER_MS));
        assert!(exit >= 8_000 * NS_PER_MS && exit - 8_000 * NS_PER_MS <= s.iteration_ns * 6 / 5);
        d.advance_to(10_000 * NS_PER_MS);
        assert!(mean_w(&d, 7_500, exit / NS_PER_MS - 5) > 600.0);
        assert!((mean_w(&d, exit / NS_PER_MS + 500, 10_000) - p.bare_idle_w).abs() < 2.0);
        assert_eq!(d.jobs()[1].end, Some((JobEnd::Exit, exit)));
    }
}

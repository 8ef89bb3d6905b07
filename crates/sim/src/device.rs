//! One simulated GPU: the true power waveform and the instruments that
//! observe it. Time advances only when someone asks (`advance_to`), in fixed
//! steps, so the result is a pure function of the demand program and seed.
//! This file holds the physics; the reads the instruments answer are in
//! `device/instruments.rs`.

use crate::board::Controller;
use crate::clocking::{DropSchedule, SampleClock};
use crate::faults::GpuFaults;
use crate::profile::Profile;
use powerlab_core::shape::{LoadKind, LoadShape};
use powerlab_core::smoothing::Draw;
use powerlab_core::training::TrainingSpec;
use powerlab_core::units::{
    J_PER_KJ, J_PER_MEGAJOULE, NS_PER_MS, NS_PER_S, NS_PER_US, j_to_mj, ms_to_ns_f64,
    ms_to_ns_trunc, ms_to_s, ns_f64_to_s, ns_to_s,
};
use powerlab_core::{EpochNs, Sample};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

mod instruments;
pub mod job;

/// What the GPU is asked to do from some time on.
#[derive(Debug, Clone, PartialEq)]
pub enum Demand {
    /// No load.
    Idle,
    /// Keep-warm load (the rung's own load) while waiting at a barrier.
    KeepWarm(LoadKind),
    /// Compute bursts each followed by an all-reduce over `[start, end)`.
    Bsp {
        /// Window start.
        start: EpochNs,
        /// Window end.
        end: EpochNs,
        /// Compute burst, ns.
        compute_ns: i64,
        /// All-reduce, ns.
        comm_ns: i64,
    },
    /// A rung's shape over `[start, end)`, idle after.
    Run {
        /// The shape.
        shape: LoadShape,
        /// Window start.
        start: EpochNs,
        /// Window end.
        end: EpochNs,
    },
    /// A workload's process (a lifecycle rung's): its CUDA
    /// initialisation at the context-held idle until `load_ns`, then the
    /// simulated job, its iteration 0 at `load_ns`, until a kill or its
    /// exit replaces it ([`job`]).
    Job {
        /// The simulated job.
        spec: TrainingSpec,
        /// Its first load.
        load_ns: EpochNs,
    },
}

/// The true power waveform at 1 ms resolution (mean power in each ms).
#[derive(Debug, Clone, Default)]
pub struct Truth {
    /// Start of the first bucket.
    pub start_ns: EpochNs,
    /// Bucket length.
    pub step_ns: i64,
    /// Mean true power per bucket, W.
    pub power_w: Vec<f32>,
}

impl Truth {
    /// Mean true power over `[a, b)`, using whole buckets.
    pub fn mean_between(&self, a: EpochNs, b: EpochNs) -> Option<f64> {
        let i0 = ((a - self.start_ns) / self.step_ns).max(0) as usize;
        let i1 = (((b - self.start_ns) / self.step_ns).max(0) as usize).min(self.power_w.len());
        if i1 <= i0 {
            return None;
        }
        Some(
            self.power_w[i0..i1]
                .iter()
                .map(|v| f64::from(*v))
                .sum::<f64>()
                / (i1 - i0) as f64,
        )
    }
}

/// How to build one simulated GPU.
#[derive(Debug, Clone)]
pub struct DeviceSetup {
    /// GPU model.
    pub profile: Profile,
    /// Run-local index.
    pub index: usize,
    /// Injected faults.
    pub faults: GpuFaults,
    /// When the device starts, idle.
    pub run_start_ns: EpochNs,
    /// This GPU's seed.
    pub seed: u64,
    /// The node's seed (what all its GPUs share: the driver's dropped readings).
    pub node_seed: u64,
    /// Physics step, µs.
    pub step_us: i64,
    /// Keep the true waveform.
    pub record_truth: bool,
}

/// Physics and instrument state of one simulated GPU.
pub struct SimDevice {
    /// The GPU model's physics parameters.
    pub profile: Profile,
    /// Run-local index.
    pub index: usize,
    faults: GpuFaults,
    run_start_ns: EpochNs,
    rng: ChaCha8Rng,
    dt_ns: i64,
    alpha_rise: f64,
    alpha_fall: f64,
    program: Vec<(EpochNs, Demand)>,
    t_ns: EpochNs,
    power_w: f64,
    controller: Controller,
    temp_c: f64,
    energy_j: f64,
    energy_base_mj: f64,
    hist: Vec<f64>,
    hist_k: i64,
    buffered_clock: SampleClock,
    field_clock: SampleClock,
    buffered: VecDeque<(EpochNs, Sample)>,
    fields_pending: VecDeque<(EpochNs, [f64; 3])>,
    fields_now: [f64; 3],
    /// Buffered samples the driver ring dropped because nobody read them in time.
    pub buffered_lost: u64,
    reads: u64,
    truth: Option<Truth>,
    truth_acc_j: f64,
    xid_reported: bool,
    /// Time under the power cap, ns (NVML's cumulative violation counter).
    power_cap_ns: i64,
    /// Time under a thermal slowdown, ns (NVML's cumulative counter).
    thermal_cap_ns: i64,
    /// The thermal slowdown's share of the loaded power (1: none).
    thermal_factor: f64,
    /// When this process created its CUDA context on the GPU (None: not
    /// yet; the GPU idles at its bare idle until then).
    context_from_ns: Option<EpochNs>,
    /// When the context ended (a workload's process, which took it over,
    /// was killed or exited): bare idle from then until the next
    /// `create_context`.
    context_until_ns: Option<EpochNs>,
    /// Every workload process this GPU ran (a lifecycle rung's), for the
    /// truth.
    jobs: Vec<job::JobTruth>,
    /// The node's seed (a job's CUDA initialisation varies with it, alike
    /// on every GPU).
    node_seed: u64,
}

impl SimDevice {
    /// Creates a device idle at `run_start_ns`.
    pub fn new(setup: DeviceSetup) -> Self {
        let DeviceSetup {
            profile,
            index,
            faults,
            run_start_ns,
            seed,
            node_seed,
            step_us,
            record_truth,
        } = setup;
        let mut rng = ChaCha8Rng::seed_from_u64(
            seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index as u64 + 1)),
        );
        let dt_ns = step_us * NS_PER_US;
        let dt_s = ns_to_s(dt_ns);
        let window = profile
            .average_window_ms
            .max(profile.buffered_window_ms + profile.buffered_lag_ms)
            .max(profile.cap_sense_ms)
            .max(1000.0);
        let hist_len = ((ms_to_ns_f64(window) * 1.3) as i64 / dt_ns + 8) as usize;
        let mut profile = profile;
        if let Some(limit) = faults.power_limit_w {
            profile.power_limit_w = limit;
        }
        // Each GPU's sampling clocks: its own phase on an exact grid and a
        // few ppm of drift; the node's dropped readings are shared.
        let drift = (rng.random::<f64>() * 2.0 - 1.0) * profile.sample_drift_ppm;
        let phase_b = ms_to_ns_trunc(rng.random::<f64>() * profile.buffered_period_ms);
        let phase_f = ms_to_ns_trunc(rng.random::<f64>() * profile.field_period_ms);
        let drops = DropSchedule::new(node_seed, run_start_ns, profile.sample_drops_per_s);
        let buffered_clock = SampleClock::new(
            run_start_ns + phase_b,
            profile.buffered_period_ms,
            drift,
            profile.sample_jitter_ms,
            rng.random(),
            Some(drops),
        );
        let field_clock = SampleClock::new(
            run_start_ns + phase_f,
            profile.field_period_ms,
            drift,
            0.0,
            rng.random(),
            None,
        );
        // No context yet: the GPU at its own idle.
        let idle = profile.bare_idle_w;
        let temp = profile.ambient_c + profile.thermal_c_per_w * idle;
        SimDevice {
            alpha_rise: 1.0 - (-dt_s / ms_to_s(profile.tau_rise_ms)).exp(),
            alpha_fall: 1.0 - (-dt_s / ms_to_s(profile.tau_fall_ms)).exp(),
            profile,
            index,
            faults,
            run_start_ns,
            rng,
            dt_ns,
            program: vec![(run_start_ns, Demand::Idle)],
            t_ns: run_start_ns,
            power_w: idle,
            controller: Controller::default(),
            temp_c: temp,
            energy_j: 0.0,
            energy_base_mj: j_to_mj(J_PER_MEGAJOULE) + j_to_mj(J_PER_KJ) * index as f64,
            hist: vec![0.0; hist_len],
            hist_k: 0,
            buffered_clock,
            field_clock,
            buffered: VecDeque::new(),
            fields_pending: VecDeque::new(),
            fields_now: [idle, idle, j_to_mj(J_PER_MEGAJOULE)],
            buffered_lost: 0,
            reads: 0,
            truth: record_truth.then(|| Truth {
                start_ns: run_start_ns,
                step_ns: NS_PER_MS,
                power_w: Vec::new(),
            }),
            truth_acc_j: 0.0,
            xid_reported: false,
            power_cap_ns: 0,
            thermal_cap_ns: 0,
            thermal_factor: 1.0,
            context_from_ns: None,
            context_until_ns: None,
            jobs: Vec::new(),
            node_seed,
        }
    }

    /// This process creates its CUDA context on the GPU at `t` (its first
    /// prepare, and the first after a workload's process took the GPU
    /// over and ended): from then on it idles at the context-held idle.
    pub fn create_context(&mut self, t: EpochNs) {
        if self.context_from_ns.is_some() && self.context_until_ns.is_none() {
            return;
        }
        self.advance_to(t);
        if !self.has_context(t.max(self.t_ns)) {
            self.context_from_ns = Some(t.max(self.t_ns));
            self.context_until_ns = None;
        }
    }

    fn has_context(&self, t: EpochNs) -> bool {
        self.context_from_ns.is_some_and(|c| c <= t) && self.context_until_ns.is_none_or(|u| t < u)
    }

    /// The enforced power limit (after fault overrides).
    pub fn power_limit_w(&self) -> f64 {
        self.profile.power_limit_w
    }

    /// The recorded true waveform, if recording.
    pub fn truth(&self) -> Option<&Truth> {
        self.truth.as_ref()
    }

    /// Time integrated so far.
    pub fn now_ns(&self) -> EpochNs {
        self.t_ns
    }

    fn lost(&self, t: EpochNs) -> bool {
        self.faults
            .lost_at_ns
            .is_some_and(|l| t >= self.run_start_ns + l)
    }

    fn brake(&self, t: EpochNs) -> bool {
        self.faults
            .power_brake_at_ns
            .is_some_and(|b| t >= self.run_start_ns + b)
    }

    /// Whether the device has fallen off the bus by `t`.
    pub fn is_lost_at(&self, t: EpochNs) -> bool {
        self.lost(t)
    }

    /// When the GPU will be lost (absolute), if ever.
    pub fn lost_at(&self) -> Option<EpochNs> {
        self.faults.lost_at_ns.map(|l| self.run_start_ns + l)
    }

    /// From when (absolute) and by how much its falls are recorded late (fault injection).
    pub fn late_falls(&self) -> Option<(EpochNs, i64)> {
        self.faults
            .late_falls
            .map(|(at, by)| (self.run_start_ns + at, by))
    }

    /// When this GPU's collectives stop progressing (fault injection).
    pub fn nccl_hang_at(&self) -> Option<EpochNs> {
        self.faults.nccl_hang_at_ns.map(|l| self.run_start_ns + l)
    }

    /// Replaces the demand from `from` on (earlier entries stay). A
    /// demand from a time still ahead is scheduled, not run to: advancing
    /// the physics there at once would fill the driver's ring with samples
    /// not yet taken and lose the oldest (the demo's NCCL sweep, set up to
    /// its end seconds ahead, lost ~330 ms of every GPU's samples so).
    pub fn set_demand(&mut self, from: EpochNs, demand: Demand) {
        let from = from.max(self.t_ns);
        self.program.retain(|(t, _)| *t < from);
        self.program.push((from, demand));
    }

    /// What `demand` asks at `t`, W, and whether it is the level load
    /// (above idle): the cap holds that one under a ceiling rather than
    /// scaling it (see [`Self::advance_to`]).
    fn demand_w(&self, demand: &Demand, t: EpochNs) -> (f64, bool) {
        if let Demand::Run { shape, start, end } = demand
            && t >= *start
            && t < *end
            && let Draw::Level(l) = shape.draw_at(*start, t)
        {
            return (self.profile.level_w(l), l > 0.0);
        }
        if let Demand::Job { spec, load_ns } = demand
            && t >= *load_ns
            && let Draw::Level(l) = spec.draw_at(*load_ns, t)
        {
            return (self.profile.level_w(l), l > 0.0);
        }
        (self.work_w(demand, t), false)
    }

    /// What `demand` asks at `t` but the level load, W.
    fn work_w(&self, demand: &Demand, t: EpochNs) -> f64 {
        let p = &self.profile;
        let load_w = |k: LoadKind| match k {
            LoadKind::Virus => p.virus_demand_w,
            LoadKind::Fabric => p.fabric_demand_w,
        };
        match demand {
            Demand::Idle if !self.has_context(t) => p.bare_idle_w,
            Demand::Idle => p.idle_w,
            Demand::KeepWarm(k) => load_w(*k),
            Demand::Bsp {
                start,
                end,
                compute_ns,
                comm_ns,
            } => {
                if t < *start || t >= *end {
                    p.idle_w
                } else if (t - start) % (compute_ns + comm_ns).max(1) < *compute_ns {
                    p.virus_demand_w
                } else {
                    p.fabric_demand_w
                }
            }
            // CUDA initialisation holds the context, no load yet; then
            // the job's compute pass (its other phases are levels).
            Demand::Job { load_ns, .. } if t < *load_ns => p.idle_w,
            Demand::Job { .. } => p.virus_demand_w,
            Demand::Run { shape, start, end } => {
                if t >= *end || t < *start {
                    p.idle_w
                } else if let LoadShape::Workload { .. } = shape {
                    // The simulated training job's compute pass.
                    p.virus_demand_w
                } else {
                    shape.load().map(load_w).unwrap_or(p.idle_w)
                }
            }
        }
    }

    fn hist_at(&self, t: EpochNs) -> f64 {
        // Cumulative energy at time t, interpolated between step boundaries.
        let rel = (t - self.run_start_ns) as f64 / self.dt_ns as f64;
        let k = rel.floor() as i64;
        let len = self.hist.len() as i64;
        let k = k.clamp(self.hist_k - len + 2, self.hist_k);
        let e0 = self.hist[k.rem_euclid(len) as usize];
        if k >= self.hist_k {
            return e0;
        }
        let e1 = self.hist[(k + 1).rem_euclid(len) as usize];
        let frac = (rel - k as f64).clamp(0.0, 1.0);
        e0 + (e1 - e0) * frac
    }

    fn window_mean(&self, end: EpochNs, window_ms: f64) -> f64 {
        let w = ms_to_ns_trunc(window_ms);
        let start = (end - w).max(self.run_start_ns);
        if end <= start {
            return self.power_w;
        }
        (self.hist_at(end) - self.hist_at(start)) / ns_to_s(end - start)
    }

    fn gauss(&mut self) -> f64 {
        let u1: f64 = self.rng.random::<f64>().max(1e-12);
        let u2: f64 = self.rng.random();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Adds the power held over `[from, to)` to the true waveform: each
    /// bucket is the mean over its own span, whether a physics step is
    /// shorter than a bucket (several steps per bucket) or longer (one step
    /// fills several buckets, each with that step's power).
    fn record_truth(&mut self, from: EpochNs, to: EpochNs) {
        let Some(truth) = self.truth.as_mut() else {
            return;
        };
        let mut at = from;
        while at < to {
            let bucket_end = truth.start_ns + (truth.power_w.len() as i64 + 1) * truth.step_ns;
            let until = bucket_end.min(to);
            self.truth_acc_j += ns_f64_to_s(self.power_w * (until - at) as f64);
            at = until;
            if until == bucket_end {
                truth
                    .power_w
                    .push((self.truth_acc_j / ns_to_s(truth.step_ns)) as f32);
                self.truth_acc_j = 0.0;
            }
        }
    }

    /// Integrates physics and instruments up to `t`.
    pub fn advance_to(&mut self, t: EpochNs) {
        let dt_s = ns_to_s(self.dt_ns);
        let mut idx = self
            .program
            .partition_point(|(from, _)| *from <= self.t_ns)
            .saturating_sub(1);
        while self.t_ns + self.dt_ns <= t {
            let step_end = self.t_ns + self.dt_ns;
            while idx + 1 < self.program.len() && self.program[idx + 1].0 <= self.t_ns {
                idx += 1;
            }
            let mid = self.t_ns + self.dt_ns / 2;
            let lost = self.lost(mid);
            let (mut want, level) = self.demand_w(&self.program[idx].1, mid);
            if want > self.profile.idle_w {
                want += self.drift_w(mid);
            }
            if self.brake(mid) {
                want = self.profile.idle_w + (want - self.profile.idle_w) * 0.45;
            }
            if let Some(w) = self.faults.spikes_w {
                // Just after a buffered sample's window closes (it covers
                // 7 to 1 ms before the sample), 15 to 19 ms before the next
                // one: the burst has decayed before that one's window opens.
                let to_next = self.buffered_clock.peek() - mid;
                if (15 * NS_PER_MS..19 * NS_PER_MS).contains(&to_next) {
                    want += w;
                }
            }
            let sensed = self.window_mean(self.t_ns, self.profile.cap_sense_ms);
            let loaded = want > self.profile.idle_w;
            let second = self.window_mean(self.t_ns, 1000.0);
            let cap = self.controller.step(
                &self.profile,
                step_end,
                self.dt_ns,
                (self.power_w, sensed, second),
                loaded,
            );
            let thermal = self.thermal_step(dt_s, loaded);
            let p = &self.profile;
            let target = if lost {
                0.0
            } else if loaded && level {
                // The cap is a ceiling on power (exactly the virus's capped
                // draw): a level load under it is not slowed, as a board
                // whose controller keeps it under its limit does not slow
                // a load well below it.
                let ceiling = p.idle_w + (p.virus_demand_w - p.idle_w) * cap;
                p.idle_w + (want.min(ceiling) - p.idle_w) * thermal
            } else if loaded {
                p.idle_w + (want - p.idle_w) * cap * thermal
            } else {
                want
            };
            let alpha = if target > self.power_w {
                self.alpha_rise
            } else {
                self.alpha_fall
            };
            self.power_w += (target - self.power_w) * alpha;
            if loaded && cap < 0.97 {
                self.power_cap_ns += self.dt_ns;
            }
            let heat = p.thermal_c_per_w + self.faults.extra_c_per_w;
            self.temp_c +=
                (p.ambient_c + heat * self.power_w - self.temp_c) * dt_s / p.thermal_tau_s;
            self.energy_j += self.power_w * dt_s;
            self.hist_k += 1;
            let len = self.hist.len() as i64;
            self.hist[self.hist_k.rem_euclid(len) as usize] = self.energy_j;
            self.t_ns = step_end;

            self.record_truth(step_end - self.dt_ns, step_end);

            self.sample_instruments(lost);
        }
    }

    /// The injected thermal slowdown: above the fault's temperature the
    /// loaded power's share falls (integral control, 0.02 per °C·s), below
    /// it recovers; the time under it is counted while loaded.
    fn thermal_step(&mut self, dt_s: f64, loaded: bool) -> f64 {
        let Some(limit) = self.faults.thermal_limit_c else {
            return 1.0;
        };
        if self.temp_c > limit {
            self.thermal_factor -= 0.02 * (self.temp_c - limit) * dt_s;
        } else {
            self.thermal_factor += 0.05 * dt_s;
        }
        self.thermal_factor = self.thermal_factor.clamp(0.2, 1.0);
        if loaded && self.thermal_factor < 0.99 {
            self.thermal_cap_ns += self.dt_ns;
        }
        self.thermal_factor
    }

    /// The injected drift of the load's demand at `t`, W (a GPU held at its
    /// power cap absorbs it, as a real board does).
    fn drift_w(&self, t: EpochNs) -> f64 {
        self.faults.drift_w_per_10min.map_or(0.0, |d| {
            d * (t - self.run_start_ns).max(0) as f64 / (600 * NS_PER_S) as f64
        })
    }

    /// A normally distributed number (for edge jitter), deterministic.
    pub fn normal(&mut self) -> f64 {
        self.gauss()
    }
}

#[cfg(test)]
mod tests;

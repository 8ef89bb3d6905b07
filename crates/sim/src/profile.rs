//! GPU profiles: the physical and instrument parameters of each simulated part.

use serde::{Deserialize, Serialize};

/// Physical and instrument parameters of one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Profile name (`h200`, `b300`, `a10g`).
    pub name: String,
    /// Marketing name reported as the device name.
    pub device_name: String,
    /// Enforced (= default) power limit, W.
    pub power_limit_w: f64,
    /// Idle draw with this process's CUDA context held (every off-phase), W.
    pub idle_w: f64,
    /// Idle draw before any CUDA context exists, W.
    pub bare_idle_w: f64,
    /// What the power virus would draw with no cap, W.
    pub virus_demand_w: f64,
    /// The level load at level 1 (all of its blocks) as a share of
    /// `virus_demand_w` (what it would draw uncapped).
    #[serde(default = "default_level_max_share")]
    pub level_max_share: f64,
    /// The level load's curve: at level `l` it asks
    /// `idle_w + (level_max_share × virus_demand_w − idle_w) × l^gamma`.
    /// Below 1 the first blocks add the most (clocks and memory wake
    /// first), as on a real GPU: the draw is not linear in the level, so
    /// a smoothing must be calibrated. Level 0 is exactly `idle_w`.
    #[serde(default = "default_level_gamma")]
    pub level_gamma: f64,
    /// What a large all-reduce draws, W.
    pub fabric_demand_w: f64,
    /// Bus bandwidth of large collectives, GB/s (the nccl-tests busbw).
    pub fabric_busbw_gbs: f64,
    /// Latency of a small collective, µs.
    pub collective_latency_us: f64,
    /// Electrical rise time constant, ms (H200: ~10 ms, read off the
    /// buffered samples after each rising edge of the committed sweep).
    pub tau_rise_ms: f64,
    /// Electrical fall time constant, ms.
    pub tau_fall_ms: f64,
    /// Fast power-cap loop gain, 1/s per unit overshoot fraction.
    pub cap_gain_per_s: f64,
    /// Time constant with which the fast loop lets go below its set point, ms.
    pub cap_relax_ms: f64,
    /// The fast loop acts on the power averaged over this window, ms.
    pub cap_sense_ms: f64,
    /// The fast loop's set point above the limit before the slow loop trips
    /// (0.045: a long on-phase reads ~730 W on a 700 W H200).
    pub cap_margin: f64,
    /// The fast loop's set point after the slow loop tripped (−0.01: a
    /// sustained load settles at 99 % of the limit).
    pub held_margin: f64,
    /// The slow loop trips when the energy drawn above the limit exceeds
    /// this many seconds of the limit (0.073 s ≈ 51 J on a 700 W H200).
    pub slow_trip_s: f64,
    /// Below the limit the slow loop's energy leaks away with this time constant, ms.
    pub slow_leak_ms: f64,
    /// How far the tripped slow loop clamps the board, as a fraction of the limit.
    pub dip_fraction: f64,
    /// How long it clamps, ms.
    pub dip_ms: f64,
    /// First `prepare` takes this long before any load (module load, JIT).
    pub cold_start_ms: f64,
    /// A workload process's CUDA initialisation, from its spawn to its
    /// first load, ms: a cold start's delay, at the context-held idle
    /// (`idle_w`) meanwhile.
    #[serde(default = "default_job_init_ms")]
    pub job_init_ms: f64,
    /// How much that initialisation varies from one start to the next,
    /// ± % (uniform, drawn from the spawn's moment: the same for every
    /// GPU of the job, which start together).
    #[serde(default = "default_job_init_spread_pct")]
    pub job_init_spread_pct: f64,
    /// Time from receiving a schedule to acting on its first deadline, ms.
    pub arm_latency_ms: f64,
    /// Device clock offset against host realtime, µs.
    pub clock_offset_us: f64,
    /// Std-dev of achieved edge error, µs.
    pub edge_jitter_us: f64,
    /// Ambient (inlet) temperature, °C.
    pub ambient_c: f64,
    /// Thermal resistance, °C per W.
    pub thermal_c_per_w: f64,
    /// Thermal time constant, s.
    pub thermal_tau_s: f64,
    /// Max SM clock, MHz.
    pub sm_clock_max_mhz: f64,
    /// Idle SM clock with the context held, MHz.
    pub sm_clock_idle_mhz: f64,
    /// Idle SM clock before any context exists, MHz.
    pub sm_clock_bare_mhz: f64,
    /// Memory clock, MHz.
    pub mem_clock_mhz: f64,
    /// Driver-buffered sample grid, ms (exact, per GPU phase).
    pub buffered_period_ms: f64,
    /// Averaging window of each buffered sample, ms.
    pub buffered_window_ms: f64,
    /// The window of a buffered sample ends this long before its timestamp, ms.
    pub buffered_lag_ms: f64,
    /// Readings now and then land this far off their grid point, ms.
    pub sample_jitter_ms: f64,
    /// Moments per second at which the driver drops a reading on every GPU.
    pub sample_drops_per_s: f64,
    /// Largest clock drift of a GPU's sampling clock, ppm.
    pub sample_drift_ppm: f64,
    /// Samples the driver ring buffer holds.
    pub buffered_capacity: usize,
    /// Delay before a buffered sample becomes readable, ms.
    pub buffered_latency_ms: f64,
    /// Update period of the instant/average/energy fields, ms.
    pub field_period_ms: f64,
    /// Averaging window of the instant field, ms.
    pub instant_window_ms: f64,
    /// Averaging window of the average field, ms.
    pub average_window_ms: f64,
    /// Delay before a field update becomes readable, ms.
    pub field_latency_ms: f64,
    /// Std-dev of instrument noise, W.
    pub noise_w: f64,
}

impl Profile {
    /// NVIDIA H200 SXM (700 W), parameters from the measurements in
    /// `shared/notes/h200-instrument.md` and the committed H200 runs: buffered
    /// samples on an exact 20 ms grid averaging ~6 ms (4–9 ms measured),
    /// fields every 100 ms, a rising edge's 850–960 W overshoot for
    /// ~80–100 ms, ~730 W through a long on-phase and the controller's dip
    /// to ~480 W about 0.85 s into it.
    pub fn h200() -> Self {
        Profile {
            name: "h200".into(),
            device_name: "NVIDIA H200 (simulated)".into(),
            power_limit_w: 700.0,
            idle_w: 90.0,
            // Measured on H200 (issue 15): 82 W at 345 MHz before the
            // harness, 124 W at 1,980 MHz with the context held; the same
            // ratio to this profile's idle.
            bare_idle_w: 60.0,
            virus_demand_w: 960.0,
            // About 880 W uncapped at level 1 (capped at the limit like the
            // virus); ~half of the swing by level 0.3.
            level_max_share: 0.92,
            level_gamma: 0.6,
            fabric_demand_w: 340.0,
            fabric_busbw_gbs: 360.0,
            collective_latency_us: 14.0,
            tau_rise_ms: 10.0,
            tau_fall_ms: 12.0,
            cap_gain_per_s: 11.0,
            cap_relax_ms: 300.0,
            cap_sense_ms: 40.0,
            cap_margin: 0.045,
            held_margin: -0.01,
            slow_trip_s: 0.064,
            slow_leak_ms: 150.0,
            dip_fraction: 0.68,
            dip_ms: 50.0,
            cold_start_ms: 2000.0,
            job_init_ms: default_job_init_ms(),
            job_init_spread_pct: default_job_init_spread_pct(),
            arm_latency_ms: 1.5,
            clock_offset_us: 150.0,
            edge_jitter_us: 3.0,
            ambient_c: 30.0,
            thermal_c_per_w: 0.065,
            thermal_tau_s: 25.0,
            sm_clock_max_mhz: 1980.0,
            sm_clock_idle_mhz: 1980.0,
            sm_clock_bare_mhz: 345.0,
            mem_clock_mhz: 3201.0,
            buffered_period_ms: 20.0,
            buffered_window_ms: 6.0,
            buffered_lag_ms: 1.0,
            sample_jitter_ms: 3.0,
            sample_drops_per_s: 0.15,
            sample_drift_ppm: 5.0,
            buffered_capacity: 119,
            buffered_latency_ms: 5.0,
            field_period_ms: 100.0,
            instant_window_ms: 25.0,
            average_window_ms: 1000.0,
            field_latency_ms: 10.0,
            noise_w: 1.5,
        }
    }

    /// NVIDIA B300 (1100 W).
    pub fn b300() -> Self {
        Profile {
            name: "b300".into(),
            device_name: "NVIDIA B300 (simulated)".into(),
            power_limit_w: 1100.0,
            idle_w: 170.0,
            // Not measured: the H200's ratio.
            bare_idle_w: 112.0,
            virus_demand_w: 1420.0,
            // Not measured: a slightly more concave curve than the H200's.
            level_max_share: 0.92,
            level_gamma: 0.55,
            fabric_demand_w: 480.0,
            fabric_busbw_gbs: 720.0,
            tau_rise_ms: 8.0,
            tau_fall_ms: 10.0,
            cold_start_ms: 3000.0,
            thermal_c_per_w: 0.045,
            sm_clock_max_mhz: 2032.0,
            sm_clock_idle_mhz: 390.0,
            sm_clock_bare_mhz: 390.0,
            mem_clock_mhz: 3996.0,
            ..Profile::h200()
        }
    }

    /// NVIDIA A10G (300 W), the rehearsal card: the virus reaches ~175 W.
    pub fn a10g() -> Self {
        Profile {
            name: "a10g".into(),
            device_name: "NVIDIA A10G (simulated)".into(),
            power_limit_w: 300.0,
            idle_w: 60.0,
            // Not measured: the H200's ratio.
            bare_idle_w: 40.0,
            virus_demand_w: 176.0,
            // Not measured: a smaller part, closer to linear.
            level_max_share: 0.9,
            level_gamma: 0.7,
            fabric_demand_w: 95.0,
            fabric_busbw_gbs: 20.0,
            collective_latency_us: 30.0,
            tau_rise_ms: 12.0,
            tau_fall_ms: 14.0,
            cold_start_ms: 6000.0,
            arm_latency_ms: 2.5,
            thermal_c_per_w: 0.16,
            sm_clock_max_mhz: 1710.0,
            sm_clock_idle_mhz: 210.0,
            sm_clock_bare_mhz: 210.0,
            mem_clock_mhz: 6251.0,
            noise_w: 1.0,
            ..Profile::h200()
        }
    }

    /// Looks a profile up by name.
    pub fn by_name(name: &str) -> Option<Profile> {
        match name {
            "h200" => Some(Self::h200()),
            "b300" => Some(Self::b300()),
            "a10g" => Some(Self::a10g()),
            _ => None,
        }
    }

    /// What the level load asks at level `l` (clamped to [0, 1]), W,
    /// before the cap: exactly `idle_w` at level 0 (a plain rung's
    /// off-phase is unchanged), `level_max_share × virus_demand_w` at 1.
    pub fn level_w(&self, l: f64) -> f64 {
        let l = if l.is_finite() {
            l.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if l == 0.0 {
            return self.idle_w;
        }
        let top = self.level_max_share * self.virus_demand_w;
        self.idle_w + (top - self.idle_w) * l.powf(self.level_gamma)
    }

    /// Names of the built-in profiles.
    pub const NAMES: &'static str = "h200, b300, a10g";
}

/// A profile written without `level_max_share` (before the level load).
fn default_level_max_share() -> f64 {
    0.92
}

/// A profile written without `level_gamma` (before the level load).
fn default_level_gamma() -> f64 {
    0.6
}

/// A profile written without `job_init_ms` (before lifecycle rungs): a
/// few hundred ms, as a small CUDA job's context and module load take.
fn default_job_init_ms() -> f64 {
    400.0
}

/// A profile written without `job_init_spread_pct`.
fn default_job_init_spread_pct() -> f64 {
    10.0
}

//! The power tap: each GPU's buffered samples (instrument `BufferedW`),
//! as the samplers read them, for the driver to measure with while it is
//! armed (a mitigation rung's calibration). The samplers feed it beside
//! the raw files, which it does not change; disarmed it keeps nothing,
//! armed it keeps at most [`TAP_CAPACITY`] samples per GPU (the newest).

use powerlab_core::{Instrument, Sample};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// The most samples the tap keeps per GPU (at one every 20 ms, 80 s).
pub const TAP_CAPACITY: usize = 4096;

#[derive(Debug, Default)]
struct TapState {
    armed: bool,
    /// (timestamp ns, W) by GPU, in arrival order.
    gpus: Vec<VecDeque<(i64, f64)>>,
}

/// A tap shared by the samplers (who feed it) and the driver (who arms and reads it).
#[derive(Debug, Clone, Default)]
pub struct PowerTap {
    state: Arc<Mutex<TapState>>,
}

impl PowerTap {
    /// A disarmed tap for `gpus` GPUs.
    pub fn new(gpus: usize) -> PowerTap {
        let state = TapState {
            armed: false,
            gpus: vec![VecDeque::new(); gpus],
        };
        PowerTap {
            state: Arc::new(Mutex::new(state)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, TapState> {
        // A panicked feeder leaves plain data behind: still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts keeping samples, from empty.
    pub fn arm(&self) {
        let mut s = self.lock();
        s.armed = true;
        s.gpus.iter_mut().for_each(VecDeque::clear);
    }

    /// Stops keeping samples and drops those kept.
    pub fn disarm(&self) {
        let mut s = self.lock();
        s.armed = false;
        s.gpus.iter_mut().for_each(VecDeque::clear);
    }

    /// Keeps GPU `gpu`'s buffered samples of `batch`, when armed.
    pub fn feed(&self, gpu: usize, batch: &[Sample]) {
        let mut s = self.lock();
        if !s.armed {
            return;
        }
        let Some(q) = s.gpus.get_mut(gpu) else {
            return;
        };
        for b in batch
            .iter()
            .filter(|b| b.instrument == Instrument::BufferedW)
        {
            if q.len() >= TAP_CAPACITY {
                q.pop_front();
            }
            q.push_back((b.ts_ns, b.value));
        }
    }

    /// GPU `gpu`'s samples kept so far: (timestamp ns, W).
    pub fn samples(&self, gpu: usize) -> Vec<(i64, f64)> {
        self.lock()
            .gpus
            .get(gpu)
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The latest timestamp kept of each GPU (None: none yet).
    pub fn latest(&self) -> Vec<Option<i64>> {
        self.lock()
            .gpus
            .iter()
            .map(|q| q.iter().map(|s| s.0).max())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ts: i64, instrument: Instrument) -> Sample {
        Sample {
            ts_ns: ts,
            instrument,
            value: ts as f64,
        }
    }

    #[test]
    fn keeps_buffered_samples_only_while_armed_and_bounded() {
        let tap = PowerTap::new(2);
        tap.feed(0, &[s(1, Instrument::BufferedW)]);
        assert!(tap.samples(0).is_empty());
        tap.arm();
        let many: Vec<_> = (0..TAP_CAPACITY as i64 + 5)
            .map(|t| s(t, Instrument::BufferedW))
            .collect();
        tap.feed(1, &many);
        tap.feed(
            0,
            &[s(7, Instrument::InstantW), s(8, Instrument::BufferedW)],
        );
        assert_eq!(tap.samples(0), vec![(8, 8.0)]);
        assert_eq!(tap.samples(1).len(), TAP_CAPACITY);
        assert_eq!(tap.samples(1)[0].0, 5);
        assert_eq!(tap.latest(), vec![Some(8), Some(TAP_CAPACITY as i64 + 4)]);
        tap.disarm();
        assert!(tap.samples(1).is_empty());
    }
}

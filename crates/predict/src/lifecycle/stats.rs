//! A waveform's figures computed as it streams, in memory bounded by the
//! longest window: the level figures, the ramp between consecutive window
//! means (per second and per minute), the largest rise and fall within a
//! window, the highest mean over each supply window, and the band share
//! of an averaged spectrum (Welch: Hann-windowed halves-overlapping
//! segments).

use powerlab_analysis::fft::{self, Complex};
use std::collections::VecDeque;

/// The change between the mean of the last window and the one before it.
#[derive(Debug, Clone)]
pub struct Ramp {
    /// Points per window.
    n: usize,
    window_s: f64,
    ring: VecDeque<f64>,
    recent: f64,
    older: f64,
    /// Fastest rise, per s (None: the span holds fewer than two windows).
    pub up_per_s: Option<f64>,
    /// Fastest fall, per s (positive).
    pub down_per_s: Option<f64>,
}

impl Ramp {
    /// Over windows of `window_s` at `resolution_ms`.
    pub fn new(window_s: f64, resolution_ms: f64) -> Ramp {
        let n = ((window_s * 1000.0 / resolution_ms).round() as usize).max(1);
        Ramp {
            n,
            window_s,
            ring: VecDeque::with_capacity(2 * n + 1),
            recent: 0.0,
            older: 0.0,
            up_per_s: None,
            down_per_s: None,
        }
    }

    /// Adds the next point.
    pub fn push(&mut self, v: f64) {
        self.ring.push_back(v);
        self.recent += v;
        if self.ring.len() > self.n {
            let moved = self.ring[self.ring.len() - 1 - self.n];
            self.recent -= moved;
            self.older += moved;
        }
        if self.ring.len() > 2 * self.n {
            let gone = self.ring.pop_front().unwrap_or(0.0);
            self.older -= gone;
        }
        if self.ring.len() == 2 * self.n {
            let rate = (self.recent - self.older) / self.n as f64 / self.window_s;
            self.up_per_s = Some(self.up_per_s.map_or(rate, |x| x.max(rate)));
            self.down_per_s = Some(self.down_per_s.map_or(-rate, |x| x.max(-rate)));
        }
    }

    /// The window, s.
    pub fn window_s(&self) -> f64 {
        self.window_s
    }
}

/// The largest rise (a point above the lowest of the window before it)
/// and fall (below the highest) within a window, by monotonic queues.
#[derive(Debug, Clone)]
pub struct Swing {
    n: usize,
    window_s: f64,
    i: usize,
    lows: VecDeque<(usize, f64)>,
    highs: VecDeque<(usize, f64)>,
    /// Largest rise within the window.
    pub rise: f64,
    /// Largest fall within the window (positive).
    pub fall: f64,
}

impl Swing {
    /// Within `window_s` at `resolution_ms`.
    pub fn new(window_s: f64, resolution_ms: f64) -> Swing {
        Swing {
            n: ((window_s * 1000.0 / resolution_ms).round() as usize).max(1),
            window_s,
            i: 0,
            lows: VecDeque::new(),
            highs: VecDeque::new(),
            rise: 0.0,
            fall: 0.0,
        }
    }

    /// Adds the next point.
    pub fn push(&mut self, v: f64) {
        let i = self.i;
        while self.lows.front().is_some_and(|x| x.0 + self.n < i) {
            self.lows.pop_front();
        }
        while self.highs.front().is_some_and(|x| x.0 + self.n < i) {
            self.highs.pop_front();
        }
        if let Some(lo) = self.lows.front() {
            self.rise = self.rise.max(v - lo.1);
        }
        if let Some(hi) = self.highs.front() {
            self.fall = self.fall.max(hi.1 - v);
        }
        while self.lows.back().is_some_and(|x| x.1 >= v) {
            self.lows.pop_back();
        }
        self.lows.push_back((i, v));
        while self.highs.back().is_some_and(|x| x.1 <= v) {
            self.highs.pop_back();
        }
        self.highs.push_back((i, v));
        self.i += 1;
    }

    /// The window, s.
    pub fn window_s(&self) -> f64 {
        self.window_s
    }
}

/// The highest mean over a sliding window.
#[derive(Debug, Clone)]
pub struct MaxMean {
    n: usize,
    /// The window, ms.
    pub window_ms: f64,
    ring: VecDeque<f64>,
    sum: f64,
    /// The highest mean (None: the span is shorter than the window).
    pub max: Option<f64>,
}

impl MaxMean {
    /// Over `window_ms` at `resolution_ms`; a window shorter than the
    /// resolution has no figure (a 500 ms point is no 20 ms mean).
    pub fn new(window_ms: f64, resolution_ms: f64) -> MaxMean {
        MaxMean {
            n: if window_ms < resolution_ms {
                usize::MAX
            } else {
                ((window_ms / resolution_ms).round() as usize).max(1)
            },
            window_ms,
            ring: VecDeque::new(),
            sum: 0.0,
            max: None,
        }
    }

    /// Adds the next point.
    pub fn push(&mut self, v: f64) {
        self.ring.push_back(v);
        self.sum += v;
        if self.ring.len() > self.n {
            self.sum -= self.ring.pop_front().unwrap_or(0.0);
        }
        if self.ring.len() == self.n {
            let m = self.sum / self.n as f64;
            self.max = Some(self.max.map_or(m, |x| x.max(m)));
        }
    }
}

/// An averaged power spectrum: Hann-windowed segments overlapping by half.
pub struct Welch {
    fft: fft::Plan,
    hann: Vec<f64>,
    buf: Vec<f64>,
    resolution_ms: f64,
    /// Summed power per bin (0 ..= n/2).
    pub power: Vec<f64>,
    /// Segments summed.
    pub segments: usize,
}

impl Welch {
    /// Segments of `n` points (a power of two) at `resolution_ms`.
    pub fn new(n: usize, resolution_ms: f64) -> Welch {
        let fft = fft::plan_forward(n);
        let hann = (0..n)
            .map(|j| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * j as f64 / n as f64).cos())
            .collect();
        Welch {
            fft,
            hann,
            buf: Vec::with_capacity(n),
            resolution_ms,
            power: vec![0.0; n / 2 + 1],
            segments: 0,
        }
    }

    /// Adds the next point.
    pub fn push(&mut self, v: f64) {
        self.buf.push(v);
        let n = self.hann.len();
        if self.buf.len() == n {
            self.segment();
            self.buf.drain(..n / 2);
        }
    }

    fn segment(&mut self) {
        let n = self.buf.len();
        let mean = self.buf.iter().sum::<f64>() / n as f64;
        let mut x: Vec<Complex<f64>> = self
            .buf
            .iter()
            .zip(&self.hann)
            .map(|(v, w)| Complex::new((v - mean) * w, 0.0))
            .collect();
        self.fft.process(&mut x);
        for (p, c) in self.power.iter_mut().zip(&x) {
            *p += c.norm_sqr();
        }
        self.segments += 1;
    }

    /// A bin's frequency, Hz.
    pub fn hz(&self, bin: usize) -> f64 {
        bin as f64 / (self.hann.len() as f64 * self.resolution_ms / 1000.0)
    }

    /// The share of the fluctuation's power in `[lo, hi]` Hz, % (None: no
    /// whole segment).
    pub fn band_share_pct(&self, [lo, hi]: [f64; 2]) -> Option<f64> {
        if self.segments == 0 {
            return None;
        }
        let (band, total) = fft::band_energy(&self.power, |b| self.hz(b), [lo, hi]);
        (total > 0.0).then(|| 100.0 * band / total)
    }

    /// The strongest bin's frequency, Hz.
    pub fn peak_hz(&self) -> Option<f64> {
        (1..self.power.len())
            .max_by(|a, b| self.power[*a].total_cmp(&self.power[*b]))
            .filter(|_| self.segments > 0)
            .map(|b| self.hz(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_reads_as_its_size_over_the_window() {
        // 0 for 3 s, then 60 at 10 ms.
        let v: Vec<f64> = (0..600).map(|j| if j < 300 { 0.0 } else { 60.0 }).collect();
        let mut r = Ramp::new(1.0, 10.0);
        let mut s = Swing::new(1.0, 10.0);
        let mut m = MaxMean::new(500.0, 10.0);
        for x in &v {
            r.push(*x);
            s.push(*x);
            m.push(*x);
        }
        // Two 1 s windows either side of the step: 60 per second.
        assert!((r.up_per_s.unwrap() - 60.0).abs() < 1e-9);
        assert!(r.down_per_s.unwrap().abs() < 1e-9);
        assert_eq!(s.rise, 60.0);
        assert_eq!(s.fall, 0.0);
        assert_eq!(m.max, Some(60.0));
    }

    #[test]
    fn a_sine_in_the_band_holds_its_power_there() {
        let mut w = Welch::new(1024, 10.0);
        for j in 0..20_000 {
            let t = j as f64 * 0.01;
            w.push(
                5.0 + (2.0 * std::f64::consts::PI * 0.5 * t).sin()
                    + 0.1 * (2.0 * std::f64::consts::PI * 30.0 * t).sin(),
            );
        }
        let share = w.band_share_pct([0.1, 20.0]).unwrap();
        assert!(share > 98.0 && share < 100.0, "{share}");
        assert!((w.peak_hz().unwrap() - 0.5).abs() < 0.1);
    }
}

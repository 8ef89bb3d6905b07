//! A rack inside one process: one [`Transport`] per thread, joined by
//! channels. Used by tests to exercise the protocol without MPI.

use crate::{ClockSample, RackError, Transport};
use std::sync::mpsc::{Receiver, Sender, channel};

/// One rank of a local rack.
pub struct LocalRack {
    rank: usize,
    size: usize,
    name: String,
    to: Vec<Option<Sender<Vec<u8>>>>,
    from: Vec<Option<Receiver<Vec<u8>>>>,
    alarm_to: Vec<Sender<(usize, Vec<u8>)>>,
    alarms: Receiver<(usize, Vec<u8>)>,
}

impl LocalRack {
    /// `size` connected ranks, named `local<k>`.
    pub fn new(size: usize) -> Vec<LocalRack> {
        let mut to: Vec<Vec<Option<Sender<Vec<u8>>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        let mut from: Vec<Vec<Option<Receiver<Vec<u8>>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        for a in 0..size {
            for b in 0..size {
                if a != b {
                    let (tx, rx) = channel();
                    to[a][b] = Some(tx);
                    from[b][a] = Some(rx);
                }
            }
        }
        let (alarm_to, alarm_rx): (Vec<_>, Vec<_>) = (0..size).map(|_| channel()).unzip();
        to.into_iter()
            .zip(from)
            .zip(alarm_rx)
            .enumerate()
            .map(|(rank, ((to, from), alarms))| LocalRack {
                rank,
                size,
                name: format!("local{rank}"),
                to,
                from,
                alarm_to: alarm_to.clone(),
                alarms,
            })
            .collect()
    }

    fn send(&self, peer: usize, bytes: Vec<u8>) -> Result<(), RackError> {
        self.to[peer]
            .as_ref()
            .ok_or(RackError::PeerGone(peer))?
            .send(bytes)
            .map_err(|_| RackError::PeerGone(peer))
    }

    fn recv(&self, peer: usize) -> Result<Vec<u8>, RackError> {
        self.from[peer]
            .as_ref()
            .ok_or(RackError::PeerGone(peer))?
            .recv()
            .map_err(|_| RackError::PeerGone(peer))
    }
}

fn i64_bytes(v: i64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn bytes_i64(b: &[u8], rank: usize) -> Result<i64, RackError> {
    let a: [u8; 8] = b.try_into().map_err(|_| RackError::Garbled {
        rank,
        detail: format!("{} bytes for a timestamp", b.len()),
    })?;
    Ok(i64::from_le_bytes(a))
}

impl Transport for LocalRack {
    fn post_alarm(&mut self, bytes: &[u8]) -> Result<(), RackError> {
        for (peer, tx) in self
            .alarm_to
            .iter()
            .enumerate()
            .filter(|(p, _)| *p != self.rank)
        {
            tx.send((self.rank, bytes.to_vec()))
                .map_err(|_| RackError::PeerGone(peer))?;
        }
        Ok(())
    }
    fn poll_alarm(&mut self) -> Result<Option<(usize, Vec<u8>)>, RackError> {
        Ok(self.alarms.try_recv().ok())
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn node_name(&self) -> String {
        self.name.clone()
    }
    fn all_gather(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, RackError> {
        for peer in (0..self.size).filter(|&p| p != self.rank) {
            self.send(peer, bytes.to_vec())?;
        }
        (0..self.size)
            .map(|p| {
                if p == self.rank {
                    Ok(bytes.to_vec())
                } else {
                    self.recv(p)
                }
            })
            .collect()
    }
    fn clock_exchange(
        &mut self,
        rounds: usize,
        now_ns: &dyn Fn() -> i64,
    ) -> Result<Vec<Vec<ClockSample>>, RackError> {
        let mut out = vec![Vec::new(); self.size];
        if self.rank == 0 {
            for (peer, samples) in out.iter_mut().enumerate().skip(1) {
                for _ in 0..rounds {
                    let t0_ns = now_ns();
                    self.send(peer, i64_bytes(t0_ns))?;
                    let t1_ns = bytes_i64(&self.recv(peer)?, peer)?;
                    samples.push(ClockSample {
                        t0_ns,
                        t1_ns,
                        t2_ns: now_ns(),
                    });
                }
            }
        } else {
            for _ in 0..rounds {
                self.recv(0)?;
                self.send(0, i64_bytes(now_ns()))?;
            }
        }
        Ok(out)
    }
}

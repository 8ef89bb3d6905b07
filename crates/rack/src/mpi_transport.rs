//! The rack over the system's MPI library (the `mpi` crate): all-gather of
//! variable-length messages and point-to-point clock ping-pongs on
//! `MPI_COMM_WORLD`. Every call is made from the one thread that created it
//! (`MPI_THREAD_FUNNELED`); [`crate::link::RackLink`] guarantees that.

use crate::{ClockSample, RackError, Transport};
use mpi::Threading;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// MPI_COMM_WORLD of this job.
pub struct MpiTransport {
    // Dropping the universe finalizes MPI: it must outlive `world`.
    world: SimpleCommunicator,
    _universe: Universe,
    name: String,
}

impl MpiTransport {
    /// Initialises MPI on the calling thread.
    ///
    /// # Errors
    ///
    /// Returns [`RackError::Init`] if MPI was already initialised in this
    /// process (MPI can be initialised only once). Other MPI failures are
    /// not returned: MPI's default error handler aborts the job instead.
    pub fn init() -> Result<MpiTransport, RackError> {
        let (universe, _level) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| RackError::Init("MPI was already initialised in this process".into()))?;
        let world = universe.world();
        let name = mpi::environment::processor_name().unwrap_or_else(|_| "unknown-host".into());
        Ok(MpiTransport {
            world,
            _universe: universe,
            name,
        })
    }
}

/// Tag of alarm messages (point to point, never mixed with collectives).
const ALARM_TAG: i32 = 0x5a1a;

impl Transport for MpiTransport {
    fn post_alarm(&mut self, bytes: &[u8]) -> Result<(), RackError> {
        for peer in (0..self.size()).filter(|&p| p != self.rank()) {
            // A few hundred bytes go eagerly: this returns without the peer.
            self.world
                .process_at_rank(peer as i32)
                .send_with_tag(bytes, ALARM_TAG);
        }
        Ok(())
    }
    fn poll_alarm(&mut self) -> Result<Option<(usize, Vec<u8>)>, RackError> {
        match self
            .world
            .any_process()
            .immediate_matched_probe_with_tag(ALARM_TAG)
        {
            Some(probed) => {
                let (bytes, status) = probed.matched_receive_vec::<u8>();
                Ok(Some((status.source_rank() as usize, bytes)))
            }
            None => Ok(None),
        }
    }
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn node_name(&self) -> String {
        self.name.clone()
    }
    fn all_gather(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, RackError> {
        let size = self.size();
        let len = i32::try_from(bytes.len()).map_err(|_| {
            RackError::Mismatch(format!("a {} byte message is too long", bytes.len()))
        })?;
        let mut lens = vec![0i32; size];
        self.world.all_gather_into(&len, &mut lens[..]);
        let mut displs = Vec::with_capacity(size);
        let mut total = 0i32;
        for l in &lens {
            displs.push(total);
            total = total
                .checked_add(*l)
                .ok_or_else(|| RackError::Mismatch("the gathered messages exceed 2 GiB".into()))?;
        }
        let mut buf = vec![0u8; total as usize];
        {
            let mut part = PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
            self.world.all_gather_varcount_into(bytes, &mut part);
        }
        Ok(lens
            .iter()
            .zip(&displs)
            .map(|(l, d)| buf[*d as usize..(*d + *l) as usize].to_vec())
            .collect())
    }
    fn clock_exchange(
        &mut self,
        rounds: usize,
        now_ns: &dyn Fn() -> i64,
    ) -> Result<Vec<Vec<ClockSample>>, RackError> {
        let size = self.size();
        let mut out = vec![Vec::new(); size];
        if self.rank() == 0 {
            for (peer, samples) in out.iter_mut().enumerate().skip(1) {
                let p = self.world.process_at_rank(peer as i32);
                for _ in 0..rounds {
                    let t0_ns = now_ns();
                    p.send(&t0_ns);
                    let (t1_ns, _status) = p.receive::<i64>();
                    samples.push(ClockSample {
                        t0_ns,
                        t1_ns,
                        t2_ns: now_ns(),
                    });
                }
            }
        } else {
            let root = self.world.process_at_rank(0);
            for _ in 0..rounds {
                let (_t0, _status) = root.receive::<i64>();
                let t1 = now_ns();
                root.send(&t1);
            }
        }
        Ok(out)
    }
}

//! The rack: several nodes running one campaign, one `powerlab` process per
//! node, launched by `mpirun` or Slurm's `srun`. This crate owns the
//! cross-node contract: who coordinates (rank 0), how the ranks exchange
//! small messages, how each node's realtime clock is compared with rank 0's,
//! and the message protocol that makes every node start each rung at the
//! same absolute epoch or stop together. The exchange sits behind a blocking
//! [`Transport`] with three implementations: [`Solo`] (one node, no MPI),
//! [`local::LocalRack`] (threads of one process, for tests) and, with the
//! `mpi` feature, [`mpi_transport::MpiTransport`] over the system's MPI
//! library. [`link::RackLink`] runs a transport on a thread of its own so
//! that an async coordinator can wait on it and still notice a stop.

pub mod clock;
pub mod launcher;
pub mod link;
pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi_transport;
pub mod protocol;

pub use clock::{ClockOffset, ClockSample};
pub use link::{Pending, RackLink};
pub use protocol::{Agreement, NodeEnd, RackMsg};

/// What can go wrong between nodes.
#[derive(Debug, thiserror::Error)]
pub enum RackError {
    /// MPI could not be started.
    #[error("MPI initialisation failed: {0}")]
    Init(String),
    /// A message could not be read.
    #[error(
        "rank {rank} sent a message this rank cannot read ({detail}); are all nodes running the same powerlab build and campaign?"
    )]
    Garbled {
        /// The rank that sent the garbled message.
        rank: usize,
        /// Parse error.
        detail: String,
    },
    /// The nodes disagree about something they must share.
    #[error("the nodes disagree: {0}")]
    Mismatch(String),
    /// A peer vanished (a local test rack whose thread ended).
    #[error("rank {0} is gone")]
    PeerGone(usize),
    /// The transport thread ended.
    #[error("the rack link thread has ended")]
    LinkClosed,
}

/// One rank's view of the rack.
pub trait Transport {
    /// This process's rank, 0-based.
    fn rank(&self) -> usize;
    /// Number of ranks (nodes).
    fn size(&self) -> usize;
    /// This node's name as the launcher knows it.
    fn node_name(&self) -> String;
    /// Every rank contributes `bytes`; every rank receives all contributions,
    /// indexed by rank. A collective: every rank must call it, in the same order.
    ///
    /// # Errors
    ///
    /// Returns [`RackError::PeerGone`] if another rank has gone (in a local
    /// test rack), and [`RackError::Mismatch`] if a message or the gathered
    /// total is too long for MPI's 32-bit counts (2 GiB).
    fn all_gather(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, RackError>;
    /// `rounds` ping-pongs between rank 0 and every other rank, each answer
    /// stamped with the peer's `now_ns`. Rank 0 gets the samples of every
    /// rank (its own entry empty); the others get an empty list. A collective.
    ///
    /// # Errors
    ///
    /// Returns [`RackError::PeerGone`] if a peer has gone before answering,
    /// and [`RackError::Garbled`] if a peer's answer is not a timestamp.
    fn clock_exchange(
        &mut self,
        rounds: usize,
        now_ns: &dyn Fn() -> i64,
    ) -> Result<Vec<Vec<ClockSample>>, RackError>;
    /// Sends `bytes` to every other rank outside any collective (a node
    /// that leaves its rung loop tells the others at once, mid-rung).
    ///
    /// # Errors
    ///
    /// Returns [`RackError::PeerGone`] if a rank can no longer be reached
    /// (in a local test rack); over MPI the sends are eager and do not fail.
    fn post_alarm(&mut self, bytes: &[u8]) -> Result<(), RackError>;
    /// An alarm from another rank, if one has arrived (never blocks).
    ///
    /// # Errors
    ///
    /// The transports of this crate never fail here; the `Result` leaves
    /// room for one that can report a broken link.
    fn poll_alarm(&mut self) -> Result<Option<(usize, Vec<u8>)>, RackError>;
}

/// A rack of one: the single-node run, which needs no MPI.
#[derive(Debug, Clone)]
pub struct Solo {
    /// The node's name.
    pub name: String,
}

impl Transport for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn node_name(&self) -> String {
        self.name.clone()
    }
    fn all_gather(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, RackError> {
        Ok(vec![bytes.to_vec()])
    }
    fn clock_exchange(
        &mut self,
        _rounds: usize,
        _now_ns: &dyn Fn() -> i64,
    ) -> Result<Vec<Vec<ClockSample>>, RackError> {
        Ok(vec![Vec::new()])
    }
    fn post_alarm(&mut self, _bytes: &[u8]) -> Result<(), RackError> {
        Ok(())
    }
    fn poll_alarm(&mut self) -> Result<Option<(usize, Vec<u8>)>, RackError> {
        Ok(None)
    }
}

/// The name a node goes by in a rack run directory: rank first, so the
/// directory listing is in rank order, then the host.
pub fn node_label(rank: usize, host: &str) -> String {
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("n{rank:03}-{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_labels_sort_by_rank_and_are_path_safe() {
        assert_eq!(node_label(2, "gpu-a07"), "n002-gpu-a07");
        assert_eq!(node_label(0, "a/b c"), "n000-a_b_c");
        let mut v = vec![
            node_label(10, "x"),
            node_label(9, "y"),
            node_label(100, "a"),
        ];
        v.sort();
        assert_eq!(v, vec!["n009-y", "n010-x", "n100-a"]);
    }
}

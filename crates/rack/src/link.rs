//! A transport on a thread of its own. MPI wants every call from one thread
//! and its collectives block; the coordinator is async and must keep
//! noticing Ctrl-C, SIGTERM (what mpirun sends every rank when one fails)
//! and its own timeouts while it waits. So each exchange is a job sent to
//! the link thread, and the caller polls its [`Pending`] answer.

use crate::{RackError, Transport};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often an idle link thread looks for alarms.
const ALARM_POLL: Duration = Duration::from_millis(5);

type Job = Box<dyn FnOnce(&mut dyn Transport) + Send>;

/// Who this process is in the rack (known once the transport is up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankInfo {
    /// This process's rank.
    pub rank: usize,
    /// How many ranks the rack has.
    pub size: usize,
    /// Node name as the launcher knows it.
    pub node_name: String,
}

/// The handle to the link thread.
pub struct RackLink {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    info: RankInfo,
    alarms: Arc<Mutex<Vec<Alarm>>>,
}

/// An alarm as it arrived: the sending rank and its encoded message.
pub type Alarm = (usize, Vec<u8>);

/// An answer that will come from the link thread.
pub struct Pending<T> {
    rx: Receiver<Result<T, RackError>>,
}

impl<T> Pending<T> {
    /// The answer, if it has come.
    pub fn try_take(&self) -> Option<Result<T, RackError>> {
        match self.rx.try_recv() {
            Ok(v) => Some(v),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(RackError::LinkClosed)),
        }
    }

    /// Blocks for the answer.
    ///
    /// # Errors
    ///
    /// Returns the transport's own error for the job, or
    /// [`RackError::LinkClosed`] if the link thread ended without answering.
    pub fn wait(self) -> Result<T, RackError> {
        self.rx.recv().unwrap_or(Err(RackError::LinkClosed))
    }
}

impl RackLink {
    /// Starts the link thread; `make` builds the transport on it (MPI is
    /// initialised by the thread that will make every call).
    ///
    /// # Errors
    ///
    /// Returns the error of `make` (typically [`RackError::Init`] when MPI
    /// cannot be initialised), [`RackError::Init`] if the thread cannot be
    /// spawned, and [`RackError::LinkClosed`] if the thread ends before it
    /// reports the rank (for instance because `make` panicked).
    pub fn start<F>(make: F) -> Result<RackLink, RackError>
    where
        F: FnOnce() -> Result<Box<dyn Transport>, RackError> + Send + 'static,
    {
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let (info_tx, info_rx) = channel::<Result<RankInfo, RackError>>();
        let alarms = Arc::new(Mutex::new(Vec::new()));
        let inbox = alarms.clone();
        let thread = std::thread::Builder::new()
            .name("rack-link".into())
            .spawn(move || {
                let mut transport = match make() {
                    Ok(t) => t,
                    Err(e) => {
                        let _ = info_tx.send(Err(e));
                        return;
                    }
                };
                let info = RankInfo {
                    rank: transport.rank(),
                    size: transport.size(),
                    node_name: transport.node_name(),
                };
                if info_tx.send(Ok(info)).is_err() {
                    return;
                }
                // Runs until every handle is gone; the transport (and with it
                // MPI) is finalised when this closure returns. Between jobs
                // it collects the other nodes' alarms.
                loop {
                    match jobs_rx.recv_timeout(ALARM_POLL) {
                        Ok(job) => job(transport.as_mut()),
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                    while let Ok(Some(a)) = transport.poll_alarm() {
                        if let Ok(mut v) = inbox.lock() {
                            v.push(a);
                        }
                    }
                }
            })
            .map_err(|e| RackError::Init(format!("cannot start the rack link thread: {e}")))?;
        let info = info_rx.recv().unwrap_or(Err(RackError::LinkClosed))?;
        Ok(RackLink {
            jobs: Some(jobs_tx),
            thread: Some(thread),
            info,
            alarms,
        })
    }

    /// Rank, size and node name.
    pub fn info(&self) -> &RankInfo {
        &self.info
    }

    /// Alarms received so far from other ranks: (rank, bytes), oldest first.
    pub fn alarms(&self) -> Vec<Alarm> {
        self.alarms.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Queues `f` on the link thread.
    pub fn submit<T, F>(&self, f: F) -> Pending<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Transport) -> Result<T, RackError> + Send + 'static,
    {
        let (tx, rx) = channel();
        let job: Job = Box::new(move |t| {
            let _ = tx.send(f(t));
        });
        if let Some(jobs) = &self.jobs {
            // A closed channel shows up as LinkClosed in the Pending.
            let _ = jobs.send(job);
        }
        Pending { rx }
    }

    /// Ends the link after its queued jobs and waits for the thread, which
    /// finalises MPI. Only call when every rank is at the same point (after
    /// the last collective): a blocked collective would block this too.
    pub fn shutdown(mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl RackLink {
    /// [`shutdown`](Self::shutdown), but gives up after `limit` (a peer
    /// that never reaches finalisation): returns whether it finished.
    pub fn shutdown_within(mut self, limit: std::time::Duration) -> bool {
        self.jobs = None;
        let Some(t) = self.thread.take() else {
            return true;
        };
        let (tx, rx) = channel();
        let _ = std::thread::Builder::new()
            .name("rack-shutdown".into())
            .spawn(move || {
                let _ = t.join();
                let _ = tx.send(());
            });
        rx.recv_timeout(limit).is_ok()
    }
}

impl Drop for RackLink {
    fn drop(&mut self) {
        // Never join here: the thread may be blocked in a collective whose
        // peers are gone; the process exit ends it.
        self.jobs = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::LocalRack;

    #[test]
    fn jobs_run_on_the_link_thread_in_order() {
        let mut racks = LocalRack::new(2).into_iter();
        let a = racks.next().unwrap();
        let b = racks.next().unwrap();
        let la = RackLink::start(move || Ok(Box::new(a) as Box<dyn Transport>)).unwrap();
        let lb = RackLink::start(move || Ok(Box::new(b) as Box<dyn Transport>)).unwrap();
        assert_eq!((la.info().rank, lb.info().rank, la.info().size), (0, 1, 2));
        let pa = la.submit(|t| t.all_gather(b"from 0"));
        let pb = lb.submit(|t| t.all_gather(b"from 1"));
        let ga = pa.wait().unwrap();
        assert_eq!(ga, pb.wait().unwrap());
        assert_eq!(ga, vec![b"from 0".to_vec(), b"from 1".to_vec()]);
        la.shutdown();
        lb.shutdown();
    }

    #[test]
    fn an_alarm_reaches_every_other_rank_without_a_collective() {
        let links: Vec<RackLink> = LocalRack::new(3)
            .into_iter()
            .map(|t| RackLink::start(move || Ok(Box::new(t) as Box<dyn Transport>)).unwrap())
            .collect();
        links[1]
            .submit(|t| t.post_alarm(b"gpu3 lost"))
            .wait()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while (links[0].alarms().is_empty() || links[2].alarms().is_empty())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(links[0].alarms(), vec![(1, b"gpu3 lost".to_vec())]);
        assert_eq!(links[2].alarms(), vec![(1, b"gpu3 lost".to_vec())]);
        assert!(links[1].alarms().is_empty(), "a rank does not alarm itself");
    }

    #[test]
    fn a_failed_start_is_an_error_not_a_hang() {
        let e = RackLink::start(|| Err(RackError::Init("no libmpi".into())))
            .err()
            .unwrap();
        assert!(e.to_string().contains("no libmpi"));
    }
}

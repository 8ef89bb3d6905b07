//! The rack protocol. Every exchange is an all-gather of one [`RackMsg`]
//! per rank, and every rank derives the same decision from the same
//! gathered messages, so no rank ever acts on a value the others lack.
//!
//! - Before each rung every node sends `Rung` (its clock, the lead its GPUs
//!   need, how long its last exchange took). If all sent `Rung` for the same
//!   rung, the epoch is the latest `now + lead` plus a margin for the
//!   exchange itself: every node starts at that absolute time.
//! - A node that leaves the rung loop (done, failed, interrupted) sends
//!   `End` from then on. Seeing any `End`, every other node stops too and
//!   sends `End` itself; a node keeps exchanging `End` until all do, so the
//!   collectives always pair up and the last exchange is one of all `End`s.

use crate::clock::{ClockOffset, estimate};
use crate::{RackError, Transport};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// How a node left the rung loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum NodeEnd {
    /// Every rung ran.
    Complete,
    /// A fault on this node.
    Failed {
        /// Why this node stopped.
        reason: String,
    },
    /// Ctrl-C or SIGTERM on this node.
    Interrupted {
        /// Why this node failed.
        reason: String,
    },
    /// Stopped because another node ended first.
    Stopped {
        /// The node that ended.
        by_rank: usize,
        /// What it said.
        reason: String,
    },
}

impl NodeEnd {
    /// The reason, if the end was not a completion.
    pub fn reason(&self) -> Option<&str> {
        match self {
            NodeEnd::Complete => None,
            NodeEnd::Failed { reason }
            | NodeEnd::Interrupted { reason }
            | NodeEnd::Stopped { reason, .. } => Some(reason),
        }
    }
}

/// One rank's contribution to an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum RackMsg {
    /// Ready to start a rung.
    Rung {
        /// The rung (same plan on every node).
        rung_id: u32,
        /// This node's run clock now, ns.
        now_ns: i64,
        /// Lead this node's GPUs need between the decision and the start, ns.
        lead_ns: i64,
        /// How long this node's previous exchange took, ns.
        exchange_ns: i64,
    },
    /// Out of the rung loop.
    End {
        /// How this node's run ended.
        end: NodeEnd,
    },
}

/// What every node does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agreement {
    /// Start the rung at this epoch.
    Start {
        /// Window start on every node, ns.
        epoch_ns: i64,
    },
    /// Stop: rank `rank` has ended this way.
    Stop {
        /// The first rank (in rank order) that ended other than by completing.
        rank: usize,
        /// How it ended.
        end: NodeEnd,
    },
}

/// Shortest margin added for the exchange itself.
pub const MIN_MARGIN_NS: i64 = powerlab_core::units::NS_PER_MS;
/// Longest margin.
pub const MAX_MARGIN_NS: i64 = powerlab_core::units::NS_PER_S;

/// The decision every rank derives from one exchange.
///
/// # Errors
///
/// Returns [`RackError::Mismatch`] if the messages show that the nodes'
/// plans differ: two ranks are at different rungs, or a rank finished
/// every rung while others still have rungs to run.
pub fn decide(msgs: &[RackMsg]) -> Result<Agreement, RackError> {
    let ended: Vec<(usize, &NodeEnd)> = msgs
        .iter()
        .enumerate()
        .filter_map(|(r, m)| {
            if let RackMsg::End { end } = m {
                Some((r, end))
            } else {
                None
            }
        })
        .collect();
    if !ended.is_empty() {
        // The cause, not an echo: a failure or interrupt before a node that
        // only stopped because of it.
        let pick = ended
            .iter()
            .find(|(_, e)| matches!(e, NodeEnd::Failed { .. } | NodeEnd::Interrupted { .. }))
            .or_else(|| {
                ended
                    .iter()
                    .find(|(_, e)| matches!(e, NodeEnd::Stopped { .. }))
            })
            .unwrap_or(&ended[0]);
        if matches!(pick.1, NodeEnd::Complete) && ended.len() < msgs.len() {
            return Err(RackError::Mismatch(format!(
                "rank {} finished every rung while others still have rungs to run: the nodes' plans differ (same campaign file and --repeats on every node?)",
                pick.0
            )));
        }
        return Ok(Agreement::Stop {
            rank: pick.0,
            end: pick.1.clone(),
        });
    }
    let mut rung = None;
    let mut latest = i64::MIN;
    let mut slowest_exchange = 0i64;
    for (r, m) in msgs.iter().enumerate() {
        if let RackMsg::Rung {
            rung_id,
            now_ns,
            lead_ns,
            exchange_ns,
        } = m
        {
            match rung {
                None => rung = Some(*rung_id),
                Some(id) if id != *rung_id => {
                    return Err(RackError::Mismatch(format!(
                        "rank 0 is at rung {id}, rank {r} at rung {rung_id}: the nodes' plans differ (same campaign file and --repeats on every node?)"
                    )));
                }
                _ => {}
            }
            latest = latest.max(now_ns.saturating_add(*lead_ns));
            slowest_exchange = slowest_exchange.max(*exchange_ns);
        }
    }
    let margin = (2 * slowest_exchange).clamp(MIN_MARGIN_NS, MAX_MARGIN_NS);
    Ok(Agreement::Start {
        epoch_ns: latest.saturating_add(margin),
    })
}

/// Whether every rank has ended (the last exchange).
pub fn all_ended(msgs: &[RackMsg]) -> bool {
    msgs.iter().all(|m| matches!(m, RackMsg::End { .. }))
}

/// All-gathers one serialisable value per rank.
///
/// # Errors
///
/// Returns [`RackError::Garbled`] if `value` cannot be serialized to JSON
/// or a rank's contribution does not deserialize as `T` (the error names
/// that rank), and any error of [`Transport::all_gather`].
pub fn gather_json<T: Serialize + DeserializeOwned>(
    t: &mut dyn Transport,
    value: &T,
) -> Result<Vec<T>, RackError> {
    let bytes = serde_json::to_vec(value).map_err(|e| RackError::Garbled {
        rank: t.rank(),
        detail: e.to_string(),
    })?;
    t.all_gather(&bytes)?
        .iter()
        .enumerate()
        .map(|(rank, b)| {
            serde_json::from_slice(b).map_err(|e| RackError::Garbled {
                rank,
                detail: e.to_string(),
            })
        })
        .collect()
}

/// Every node's realtime clock against rank 0's, known to every rank
/// (rank 0's own entry has offset 0).
///
/// # Errors
///
/// Returns [`RackError::Mismatch`] if rank 0 got no clock sample from some
/// node, or if the offsets rank 0 shares do not cover every rank; and any
/// error of [`Transport::clock_exchange`] or of [`gather_json`].
pub fn clock_offsets(
    t: &mut dyn Transport,
    rounds: usize,
    now_ns: &dyn Fn() -> i64,
) -> Result<Vec<ClockOffset>, RackError> {
    let samples = t.clock_exchange(rounds, now_ns)?;
    let mine: Vec<ClockOffset> = if t.rank() == 0 {
        samples
            .iter()
            .enumerate()
            .map(|(rank, s)| {
                if rank == 0 {
                    Some(ClockOffset {
                        rank,
                        offset_ns: 0,
                        rtt_ns: 0,
                        rounds: 0,
                    })
                } else {
                    estimate(rank, s)
                }
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| RackError::Mismatch("a node answered no clock ping".into()))?
    } else {
        Vec::new()
    };
    let all = gather_json(t, &mine)?;
    all.into_iter()
        .next()
        .filter(|v| v.len() == t.size())
        .ok_or_else(|| RackError::Mismatch("rank 0 sent no clock offsets".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::LocalRack;

    fn rung(id: u32, now: i64, lead: i64) -> RackMsg {
        RackMsg::Rung {
            rung_id: id,
            now_ns: now,
            lead_ns: lead,
            exchange_ns: 0,
        }
    }

    #[test]
    fn the_epoch_is_the_latest_ready_time_plus_a_margin() {
        let d = decide(&[
            rung(3, 1_000_000_000, 10_000_000),
            rung(3, 1_005_000_000, 10_000_000),
            rung(3, 990_000_000, 40_000_000),
        ])
        .unwrap();
        assert_eq!(
            d,
            Agreement::Start {
                epoch_ns: 1_030_000_000 + MIN_MARGIN_NS
            }
        );
        let slow = RackMsg::Rung {
            rung_id: 3,
            now_ns: 0,
            lead_ns: 0,
            exchange_ns: 4_000_000,
        };
        assert_eq!(
            decide(&[rung(3, 0, 0), slow]).unwrap(),
            Agreement::Start {
                epoch_ns: 8_000_000
            }
        );
    }

    #[test]
    fn one_ended_node_stops_every_node_and_is_named_as_the_cause() {
        let failed = RackMsg::End {
            end: NodeEnd::Failed {
                reason: "gpu3 lost".into(),
            },
        };
        let echo = RackMsg::End {
            end: NodeEnd::Stopped {
                by_rank: 2,
                reason: "x".into(),
            },
        };
        match decide(&[rung(4, 0, 0), echo, failed]).unwrap() {
            Agreement::Stop { rank, end } => {
                assert_eq!((rank, end.reason()), (2, Some("gpu3 lost")))
            }
            other => panic!("{other:?}"),
        }
        assert!(all_ended(&[RackMsg::End {
            end: NodeEnd::Complete
        }]));
        assert!(!all_ended(&[
            RackMsg::End {
                end: NodeEnd::Complete
            },
            rung(0, 0, 0)
        ]));
    }

    #[test]
    fn different_plans_are_an_error_not_a_skewed_start() {
        let e = decide(&[rung(4, 0, 0), rung(5, 0, 0)]).unwrap_err();
        assert!(e.to_string().contains("plans differ"), "{e}");
        let e = decide(&[
            rung(4, 0, 0),
            RackMsg::End {
                end: NodeEnd::Complete,
            },
        ])
        .unwrap_err();
        assert!(e.to_string().contains("plans differ"), "{e}");
    }

    #[test]
    fn offsets_are_measured_against_rank_0_on_every_rank() {
        // Rank k's clock runs k × 2 ms ahead of rank 0's.
        let base = std::time::Instant::now();
        let handles: Vec<_> = LocalRack::new(4)
            .into_iter()
            .map(|mut t| {
                std::thread::spawn(move || {
                    let skew = t.rank() as i64 * 2_000_000;
                    let now = move || base.elapsed().as_nanos() as i64 + skew;
                    clock_offsets(&mut t, 16, &now).unwrap()
                })
            })
            .collect();
        let results: Vec<Vec<ClockOffset>> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        for r in &results {
            assert_eq!(r, &results[0]);
        }
        for o in &results[0] {
            let want = o.rank as i64 * 2_000_000;
            assert!(
                (o.offset_ns - want).abs() <= o.rtt_ns / 2 + 1,
                "rank {}: {} vs {want} (rtt {})",
                o.rank,
                o.offset_ns,
                o.rtt_ns
            );
        }
    }
}

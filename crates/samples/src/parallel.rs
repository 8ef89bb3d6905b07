//! Work split over the machine's cores, results kept in input order.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The cores to use: `POWERLAB_THREADS` where set (1 ..), else every core
/// the process may run on.
pub fn workers() -> usize {
    std::env::var("POWERLAB_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// `f` of every item, computed on up to [`workers`] threads (each takes
/// the next item not yet taken), returned in the items' order. One item,
/// or one worker, runs on the calling thread.
pub fn map_in_order<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let n = workers().min(items.len());
    if n <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, f(item)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// `(a(), b()?)`: `a` on a thread of its own while `b` runs on the
/// calling thread, where there is more than one [`workers`]; `b` first,
/// then `a` only if `b` succeeded, where there is one. For two pieces of
/// work that share nothing but what they read, neither of which keeps
/// every core busy.
///
/// # Errors
///
/// `b`'s error, whatever `a` did: as if `b` had run first and `a` never
/// ran. A panic of `a` (its message already printed by the panic hook)
/// does not hide `b`'s error; it is carried on only when `b` succeeded.
pub fn beside<A, B, RA, RB, E>(a: A, b: B) -> Result<(RA, RB), E>
where
    A: FnOnce() -> RA + Send,
    RA: Send,
    B: FnOnce() -> Result<RB, E>,
{
    if workers() <= 1 {
        let rb = b()?;
        return Ok((a(), rb));
    }
    std::thread::scope(|s| {
        let handle = s.spawn(a);
        let rb = b();
        let ra = handle.join();
        let rb = rb?;
        match ra {
            Ok(ra) => Ok((ra, rb)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{beside, map_in_order};

    #[test]
    fn beside_returns_each_side_its_own_result() {
        let data = [1u64, 2, 3];
        let both: Result<_, ()> = beside(|| data.iter().sum::<u64>(), || Ok(data.len()));
        assert_eq!(both, Ok((6, 3)));
    }

    #[test]
    #[should_panic(expected = "side a")]
    fn beside_carries_a_panic_of_the_other_thread_when_b_succeeds() {
        let _: Result<((), ()), ()> = beside(|| panic!("side a"), || Ok(()));
    }

    #[test]
    fn beside_gives_b_s_error_even_when_a_panics() {
        // As if b had run first: its error, not a's panic, is the answer.
        let out: Result<((), ()), &str> = beside(|| panic!("side a"), || Err("side b failed"));
        assert_eq!(out, Err("side b failed"));
    }

    #[test]
    fn results_come_back_in_the_items_order_whatever_finishes_first() {
        let items: Vec<u64> = (0..64).collect();
        let out = map_in_order(&items, |i| {
            // Early items take longest, so threads finish out of order.
            std::thread::sleep(std::time::Duration::from_micros((64 - i) * 50));
            i * 3
        });
        assert_eq!(out, items.iter().map(|i| i * 3).collect::<Vec<_>>());
    }

    #[test]
    fn no_items_gives_no_results() {
        let out: Vec<u8> = map_in_order(&[] as &[u8], |x| *x);
        assert!(out.is_empty());
    }
}

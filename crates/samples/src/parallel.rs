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

#[cfg(test)]
mod tests {
    use super::map_in_order;

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

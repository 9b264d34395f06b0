//! One work queue for the host's fan-outs (detector loads, speculative
//! gates, scratch runs, model requests): `n` jobs taken in index order by up
//! to `workers` threads (the caller's included), results returned in index
//! order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `job(0..n)` on up to `workers` threads; results in index order.
pub fn map<T, F>(n: usize, workers: usize, job: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    // The calling thread is one of the workers: one spawn fewer, none for a
    // single worker.
    let spawned = workers.clamp(1, n.max(1)) - 1;
    queue(n, spawned, job, || ()).0
}

/// [`map`] on `workers` new threads while the calling thread runs `beside`
/// (work that mostly waits, such as a durable write), then takes any jobs
/// still queued. `beside` starts at once, without the wake-up a new thread
/// costs, and waiting in it leaves the cores to the jobs.
pub fn map_beside<T, F, U>(
    n: usize,
    workers: usize,
    job: F,
    beside: impl FnOnce() -> U,
) -> (Vec<T>, U)
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    queue(n, workers.min(n), job, beside)
}

/// `job(0..n)` on `spawned` new threads and the calling thread, which runs
/// `first` before it takes jobs.
fn queue<T, F, U>(n: usize, spawned: usize, job: F, first: impl FnOnce() -> U) -> (Vec<T>, U)
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        let done = job(i);
        *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(done);
    };
    let first_out = std::thread::scope(|s| {
        for _ in 0..spawned {
            s.spawn(work);
        }
        let first_out = first();
        work();
        first_out
    });
    let results = slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every index below n is taken by a worker")
        })
        .collect();
    (results, first_out)
}

/// One worker per core (asked once: on Linux the answer costs reads of
/// cgroup files).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_their_order() {
        assert_eq!(super::map(5, 3, |i| i * 10), vec![0, 10, 20, 30, 40]);
        assert!(super::map(0, 3, |i| i).is_empty());
    }

    #[test]
    fn beside_runs_once_and_the_jobs_all_run() {
        let (results, beside) = super::map_beside(4, 2, |i| i + 1, || "done");
        assert_eq!((results, beside), (vec![1, 2, 3, 4], "done"));
        let (results, beside) = super::map_beside(0, 2, |i| i, || 7);
        assert!(results.is_empty());
        assert_eq!(beside, 7);
    }
}

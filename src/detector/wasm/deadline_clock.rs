//! `wasi:clocks/monotonic-clock` for detectors, with every wait cut off at
//! the call's deadline.
//!
//! Epoch interruption stops a detector only while it runs WebAssembly; a
//! detector blocked in the host (`std::thread::sleep` is a monotonic-clock
//! subscription and a poll) would hold the host for as long as it asked. A
//! wait that would end past the call's deadline traps at once with
//! [`DeadlineExceeded`] (the call times out then rather than later); any other
//! wait is a pollable ready at its time.

use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::{subscribe, DynPollable, Pollable};

/// The [`HasData`] marker for linking the clock.
pub(crate) struct DeadlineClock;

impl HasData for DeadlineClock {
    type Data<'a> = ClockView<'a>;
}

/// What the clock needs of a store: its resource table and the deadline of
/// the call in progress (`None` between calls).
pub(crate) struct ClockView<'a> {
    /// The store's resource table.
    pub table: &'a mut ResourceTable,
    /// When the call must end.
    pub deadline: Option<Instant>,
}

/// The clock's origin: the guest sees nanoseconds since the first read.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn now_nanos() -> u64 {
    u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The trap of a detector that asked to wait past its deadline; the runtime
/// reports it as a timeout.
#[derive(Debug, thiserror::Error)]
#[error("the detector asked to wait past its deadline")]
pub(crate) struct DeadlineExceeded;

/// A wait that ends at `until`, before the deadline.
struct Wake {
    until: Instant,
}

#[wasmtime_wasi::async_trait]
impl Pollable for Wake {
    async fn ready(&mut self) {
        tokio::time::sleep_until(self.until.into()).await
    }
}

impl ClockView<'_> {
    fn wait(&mut self, duration: Duration) -> wasmtime::Result<Resource<DynPollable>> {
        let now = Instant::now();
        // A call always has a deadline; outside one, nothing may wait at all.
        let limit = self.deadline.unwrap_or(now);
        let until = match now.checked_add(duration) {
            Some(t) if t <= limit => t,
            _ => return Err(DeadlineExceeded.into()),
        };
        let wake = self.table.push(Wake { until })?;
        subscribe(self.table, wake)
    }
}

impl monotonic_clock::Host for ClockView<'_> {
    fn now(&mut self) -> wasmtime::Result<u64> {
        Ok(now_nanos())
    }

    fn resolution(&mut self) -> wasmtime::Result<u64> {
        Ok(1)
    }

    fn subscribe_instant(&mut self, when: u64) -> wasmtime::Result<Resource<DynPollable>> {
        self.wait(Duration::from_nanos(when.saturating_sub(now_nanos())))
    }

    fn subscribe_duration(&mut self, duration: u64) -> wasmtime::Result<Resource<DynPollable>> {
        self.wait(Duration::from_nanos(duration))
    }
}

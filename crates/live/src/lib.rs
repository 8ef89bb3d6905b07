//! Live metrics of a run: what the samplers and the coordinator know while
//! a run goes, served in the Prometheus text exposition format at
//! `/metrics` (`powerlab run --metrics-listen ADDR:PORT`).
//!
//! [`Live`] is the run's live state: the samplers record each batch of
//! readings into it and the coordinator its events and progress, each with
//! one short lock and no I/O. [`MetricsServer`] answers scrapes on its own
//! OS threads and renders the state on each scrape ([`render`]), so a
//! scraper never waits on, or slows, a sampler. docs/metrics.md lists every
//! metric.

mod addr;
mod render;
mod server;
mod state;

pub use addr::{DEFAULT_HOST, parse_listen, rank_address};
pub use render::render;
pub use server::MetricsServer;
pub use state::{BUFFERED_HOLD_NS, GapLimits, Live, RING_CAPACITY};

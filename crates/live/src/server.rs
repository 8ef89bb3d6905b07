//! The endpoint: a TCP listener bound before the run starts (so that a
//! port already taken refuses the run before any load), answered by
//! hyper's HTTP/1 server on a one-thread tokio runtime of its own.
//! `GET /metrics` renders the live state; `/` says where the metrics are;
//! anything else is 404. The sampler never waits for it: a scrape holds the
//! state's lock only to copy a snapshot.
//!
//! It is bounded whatever the clients do ([`Limits`]): at most
//! `max_connections` at once (more wait in the kernel's listen queue and
//! are taken in turn as connections end), a request head
//! of at most hyper's 8 KiB buffer (longer: 431), `header_read` to send it,
//! and `connection_life` per connection, after which it is closed between
//! two requests (a keep-alive scraper reconnects). A client that stops
//! reading holds one connection until then and slows nobody else; stopping
//! the server drops every connection at once, so it never keeps the
//! process alive.

use crate::render::{CONTENT_TYPE, render};
use crate::state::Live;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE as CONTENT_TYPE_HEADER, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{Semaphore, oneshot};

/// What one endpoint grants its clients.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; more wait in the kernel's queue.
    pub max_connections: usize,
    /// Time a client has to send a request's head.
    pub header_read: Duration,
    /// Time a connection lives; then it closes after the request in hand.
    pub connection_life: Duration,
    /// Time that last request has to finish before the connection is cut.
    pub closing_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            header_read: Duration::from_secs(5),
            connection_life: Duration::from_secs(60),
            closing_grace: Duration::from_secs(5),
        }
    }
}

/// A running endpoint; dropping it stops it at once.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` and serves `live` at `/metrics` from now on.
    ///
    /// # Errors
    /// The address cannot be bound (in use, not this host's, no
    /// permission) or the server cannot start, with the cause.
    pub fn start(addr: SocketAddr, live: Arc<Live>) -> Result<MetricsServer, String> {
        Self::start_with(addr, live, Limits::default())
    }

    /// As [`MetricsServer::start`], with the given limits.
    ///
    /// # Errors
    /// As [`MetricsServer::start`].
    pub fn start_with(
        addr: SocketAddr,
        live: Arc<Live>,
        limits: Limits,
    ) -> Result<MetricsServer, String> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                " (another process listens there: choose another port, or 0 for any free one)"
            } else {
                ""
            };
            format!("cannot listen on {addr}: {e}{hint}")
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address of {addr}: {e}"))?;
        let cannot = |e: std::io::Error| format!("cannot serve on {bound}: {e}");
        listener.set_nonblocking(true).map_err(cannot)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(cannot)?;
        let listener = {
            let _entered = rt.enter();
            tokio::net::TcpListener::from_std(listener).map_err(cannot)?
        };
        live.set_address(bound);
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("powerlab-metrics".into())
            .spawn(move || {
                rt.block_on(accept(listener, live, limits, stopped));
                // Every connection still open is dropped here, answered or not.
                rt.shutdown_background();
            })
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        Ok(MetricsServer {
            addr: bound,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port the system chose for 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The scrape URL, and for an unspecified address (which a scraper
    /// cannot connect to as written) what to put in its place.
    pub fn url(&self) -> String {
        let url = format!("http://{}/metrics", self.addr);
        if self.addr.ip().is_unspecified() {
            format!("{url} (every interface: scrape it at this host's name or address)")
        } else {
            url
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            // Bounded: the accept loop ends on the signal and the runtime
            // drops its connections without waiting for their clients.
            let _ = t.join();
        }
    }
}

/// Accepts connections until told to stop, each on a task of its own,
/// at most `limits.max_connections` at once.
async fn accept(
    listener: tokio::net::TcpListener,
    live: Arc<Live>,
    limits: Limits,
    mut stopped: oneshot::Receiver<()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        // A free slot first: while every slot is taken, new connections
        // wait in the kernel's queue and are served in turn as slots free
        // up (each within `header_read` when idle, `connection_life` +
        // `closing_grace` at most), never refused.
        let slot = tokio::select! {
            _ = &mut stopped => return,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => return,
            },
        };
        let stream = tokio::select! {
            _ = &mut stopped => return,
            got = listener.accept() => match got {
                Ok((stream, _)) => stream,
                // Out of descriptors, or a connection reset before it was
                // taken: wait a little rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let live = Arc::clone(&live);
        tokio::spawn(async move {
            connection(stream, live, limits).await;
            drop(slot);
        });
    }
}

/// One connection: requests answered until the client closes, a limit
/// is reached, or the server stops.
async fn connection(stream: tokio::net::TcpStream, live: Arc<Live>, limits: Limits) {
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let response = answer(&req, &live);
        async move { Ok::<_, Infallible>(response) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .max_buf_size(8 * 1024)
        .serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        () = tokio::time::sleep(limits.connection_life) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(limits.closing_grace, conn).await;
}

fn answer(req: &Request<Incoming>, live: &Live) -> Response<Full<Bytes>> {
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    match (get, req.uri().path()) {
        (true, "/metrics") => match render(live) {
            Ok(text) => respond(StatusCode::OK, CONTENT_TYPE, text),
            Err(e) => respond(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                format!("rendering failed: {e}\n"),
            ),
        },
        (true, "/") => respond(
            StatusCode::OK,
            "text/plain",
            "powerlab live metrics: GET /metrics\n".into(),
        ),
        (false, _) => {
            let mut r = respond(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                "only GET and HEAD\n".into(),
            );
            r.headers_mut()
                .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        }
        _ => respond(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found; the metrics are at /metrics\n".into(),
        ),
    }
}

fn respond(code: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(CONTENT_TYPE_HEADER, HeaderValue::from_static(content_type));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Instant;

    fn any() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap_or_else(|_| unreachable!())
    }

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// Reads until the server closes (Ok) or `limit` passes (Err).
    fn until_closed(s: &mut TcpStream, limit: Duration) -> Result<Vec<u8>, String> {
        s.set_read_timeout(Some(limit))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        match s.read_to_end(&mut out) {
            Ok(_) => Ok(out),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(out),
            Err(e) => Err(format!(
                "still open after {limit:?} ({e}); read {} bytes",
                out.len()
            )),
        }
    }

    fn tight() -> Limits {
        Limits {
            max_connections: 2,
            header_read: Duration::from_millis(300),
            connection_life: Duration::from_millis(600),
            closing_grace: Duration::from_millis(200),
        }
    }

    #[test]
    fn serves_metrics_and_refuses_a_taken_port() {
        let live = Arc::new(Live::new("1.2.3"));
        let server =
            MetricsServer::start(any(), Arc::clone(&live)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(live.address(), Some(server.addr()));
        let got = get(server.addr(), "/metrics");
        assert!(
            got.starts_with("HTTP/1.") && got.contains(" 200 OK"),
            "{got}"
        );
        assert!(got.contains("text/plain; version=0.0.4"), "{got}");
        assert!(
            got.contains("powerlab_build_info{version=\"1.2.3\"} 1"),
            "{got}"
        );
        let missing = get(server.addr(), "/nope");
        assert!(missing.contains(" 404 "), "{missing}");
        let again = MetricsServer::start(server.addr(), Arc::new(Live::new("x")));
        let e = again.err().unwrap_or_default();
        assert!(
            e.contains("cannot listen on") && e.contains("another process"),
            "{e}"
        );
        drop(server);
    }

    #[test]
    fn a_client_that_never_reads_nor_finishes_slows_no_scrape_and_no_stop() {
        let server =
            MetricsServer::start(any(), Arc::new(Live::new("1"))).unwrap_or_else(|e| panic!("{e}"));
        // One asks and never reads; one sends half a request head.
        let mut mute = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let _ = write!(mute, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut half = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let _ = write!(half, "GET /metrics HTTP/1.1\r\nHo");
        for _ in 0..20 {
            let got = get(server.addr(), "/metrics");
            assert!(got.contains(" 200 OK"), "{got}");
        }
        let t = Instant::now();
        drop(server);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "stopping took {:?}",
            t.elapsed()
        );
        // Stopping dropped both connections.
        until_closed(&mut half, Duration::from_secs(2)).unwrap_or_else(|e| panic!("{e}"));
        until_closed(&mut mute, Duration::from_secs(2)).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn slow_and_long_lived_clients_are_cut_at_the_limits() {
        let server = MetricsServer::start_with(any(), Arc::new(Live::new("1")), tight())
            .unwrap_or_else(|e| panic!("{e}"));
        // Sends nothing: closed after header_read.
        let mut silent = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        until_closed(&mut silent, Duration::from_secs(3)).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            t.elapsed() >= Duration::from_millis(250),
            "{:?}",
            t.elapsed()
        );
        // Keeps a connection alive with a request every 100 ms: answered,
        // then closed once connection_life has passed.
        let mut chatty = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        let mut answered = 0;
        while t.elapsed() < Duration::from_secs(3) {
            if write!(chatty, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").is_err() {
                break;
            }
            let mut buf = [0u8; 4096];
            chatty
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap_or_else(|e| panic!("{e}"));
            match chatty.read(&mut buf) {
                Ok(n) if n > 0 => answered += 1,
                _ => break,
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(answered >= 3, "answered {answered}");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "never cut: {:?}",
            t.elapsed()
        );
    }

    /// A state whose scrape is larger than the sockets' buffers.
    fn big_state() -> Arc<Live> {
        let live = Arc::new(Live::new("1"));
        let gpus: Vec<powerlab_core::hw::GpuIdentity> = (0..12_000)
            .map(|i| powerlab_core::hw::GpuIdentity {
                key: format!("gpu{i}"),
                uuid: format!("GPU-{i:08}-0000-0000-0000-000000000000"),
                name: "NVIDIA H200".into(),
                nvml_index: i,
                power_limit_w: 700.0,
                power_smoothing: Default::default(),
            })
            .collect();
        live.start_run("h", &gpus, crate::GapLimits::default(), || false);
        live
    }

    #[test]
    fn an_answer_the_client_never_reads_is_cut_at_the_connection_life() {
        let live = big_state();
        let size = render(&live).unwrap_or_default().len();
        assert!(size > 8 << 20, "the scrape is {size} bytes");
        let server =
            MetricsServer::start_with(any(), live, tight()).unwrap_or_else(|e| panic!("{e}"));
        let mut mute = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let _ = write!(mute, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        // Never read while the server writes; then read what it sent
        // before it cut the connection (life 600 ms + grace 200 ms).
        std::thread::sleep(Duration::from_millis(1500));
        let t = Instant::now();
        let got = until_closed(&mut mute, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(
            got.len() < size,
            "the whole answer ({} of {size} bytes) was sent",
            got.len()
        );
        // Others are served meanwhile and after.
        assert!(get(server.addr(), "/").contains(" 200 OK"));
    }

    #[test]
    fn an_oversized_request_is_refused_and_connections_beyond_the_cap_wait() {
        let server = MetricsServer::start_with(
            any(),
            Arc::new(Live::new("1")),
            Limits {
                // Long enough that the held connections outlast the check.
                header_read: Duration::from_secs(3),
                connection_life: Duration::from_secs(10),
                ..tight()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut big = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let filler = "a".repeat(64 * 1024);
        let _ = write!(big, "GET /metrics HTTP/1.1\r\nX-Filler: {filler}\r\n\r\n");
        let got = until_closed(&mut big, Duration::from_secs(3)).unwrap_or_else(|e| panic!("{e}"));
        let got = String::from_utf8_lossy(&got);
        assert!(got.is_empty() || got.contains(" 431 "), "{got}");
        // Two connections held open (max_connections = 2): a third waits,
        // unanswered, and is served once one of them goes.
        let hold1 = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let _hold2 = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(50));
        let mut third = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let _ = write!(third, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
        third
            .set_read_timeout(Some(Duration::from_millis(150)))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut buf = [0u8; 64];
        assert!(
            third.read(&mut buf).is_err(),
            "the third was answered while two held every slot"
        );
        drop(hold1);
        let got =
            until_closed(&mut third, Duration::from_secs(2)).unwrap_or_else(|e| panic!("{e}"));
        let got = String::from_utf8_lossy(&got);
        assert!(got.contains(" 200 OK"), "{got}");
        // A method other than GET or HEAD: 405 saying which are allowed.
        let mut post = TcpStream::connect(server.addr()).unwrap_or_else(|e| panic!("{e}"));
        let _ = write!(post, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
        let got = until_closed(&mut post, Duration::from_secs(2)).unwrap_or_else(|e| panic!("{e}"));
        let got = String::from_utf8_lossy(&got).to_lowercase();
        assert!(
            got.contains(" 405 ") && got.contains("allow: get, head"),
            "{got}"
        );
    }
}

//! The endpoint: a TCP listener bound before the run starts (so that a
//! port already taken refuses the run before any load), answered by
//! `tiny_http` on its own OS threads. `GET /metrics` renders the live
//! state; anything else is 404. The sampler never waits for it: a scrape
//! holds the state's lock only to copy a snapshot.

use crate::render::{CONTENT_TYPE, render};
use crate::state::Live;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A running endpoint; dropping it stops it.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` and serves `live` at `/metrics` from now on.
    ///
    /// # Errors
    /// The address cannot be bound (in use, not this host's, no
    /// permission) or the server cannot start, with the cause.
    pub fn start(addr: SocketAddr, live: Arc<Live>) -> Result<MetricsServer, String> {
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
        let server = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| format!("cannot serve on {bound}: {e}"))?;
        let server = Arc::new(server);
        live.set_address(bound);
        let serving = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name("powerlab-metrics".into())
            .spawn(move || serve(&serving, &live))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        Ok(MetricsServer {
            server,
            addr: bound,
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port the system chose for 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The scrape URL.
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, live: &Live) {
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or_default();
        let get = matches!(
            req.method(),
            tiny_http::Method::Get | tiny_http::Method::Head
        );
        let response = match (get, path) {
            (true, "/metrics") => match render(live) {
                Ok(text) => respond(200, CONTENT_TYPE, text),
                Err(e) => respond(500, "text/plain", format!("rendering failed: {e}\n")),
            },
            (true, "/") => respond(
                200,
                "text/plain",
                "powerlab live metrics: GET /metrics\n".into(),
            ),
            (false, _) => respond(405, "text/plain", "only GET\n".into()),
            _ => respond(
                404,
                "text/plain",
                "not found; the metrics are at /metrics\n".into(),
            ),
        };
        // A scraper that went away is no error of the run.
        let _ = req.respond(response);
    }
}

fn respond(
    code: u16,
    content_type: &str,
    body: String,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes())
        .unwrap_or_else(|()| {
            tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"text/plain"[..])
                .unwrap_or_else(|()| unreachable!("a constant header"))
        });
    tiny_http::Response::from_string(body)
        .with_status_code(code)
        .with_header(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn serves_metrics_and_refuses_a_taken_port() {
        let live = Arc::new(Live::new("1.2.3"));
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap_or_else(|_| unreachable!());
        let server = MetricsServer::start(any, Arc::clone(&live)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(live.address(), Some(server.addr()));
        let got = get(server.addr(), "/metrics");
        assert!(got.starts_with("HTTP/1.0 200"), "{got}");
        assert!(got.contains("text/plain; version=0.0.4"), "{got}");
        assert!(
            got.contains("powerlab_build_info{version=\"1.2.3\"} 1"),
            "{got}"
        );
        let missing = get(server.addr(), "/nope");
        assert!(missing.starts_with("HTTP/1.0 404"), "{missing}");
        let again = MetricsServer::start(server.addr(), Arc::new(Live::new("x")));
        let e = again.err().unwrap_or_default();
        assert!(
            e.contains("cannot listen on") && e.contains("another process"),
            "{e}"
        );
        drop(server);
    }
}

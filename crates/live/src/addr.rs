//! The address a metrics endpoint listens on: `PORT` alone is loopback
//! (`127.0.0.1:PORT`); any other interface only when written out. A rack
//! rank serves `PORT + its node-local rank`, so that the ranks sharing a
//! host each get a port of their own.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The interface a bare `PORT` listens on.
pub const DEFAULT_HOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Parses `--metrics-listen`: `PORT` (loopback), `IPv4:PORT` or
/// `[IPv6]:PORT`. Port 0 asks the system for any free port (the bound
/// address is said on stderr).
///
/// # Errors
/// The value in words, and what is allowed.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let t = s.trim();
    let digits = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if let Some(port) = digits.then(|| t.parse::<u16>().ok()).flatten() {
        return Ok(SocketAddr::new(DEFAULT_HOST, port));
    }
    t.parse::<SocketAddr>().map_err(|_| {
        format!(
            "`{s}` is not a port or an address with a port (allowed: PORT for 127.0.0.1:PORT, IPv4:PORT, [IPv6]:PORT; 0 for any free port)"
        )
    })
}

/// The address rank `local_rank` of a host serves: the port plus the
/// rank (port 0 stays 0: each rank gets its own free port).
///
/// # Errors
/// When the port plus the rank passes 65535.
pub fn rank_address(base: SocketAddr, local_rank: usize) -> Result<SocketAddr, String> {
    if base.port() == 0 {
        return Ok(base);
    }
    let port = u16::try_from(usize::from(base.port()) + local_rank).map_err(|_| {
        format!(
            "port {} + node-local rank {local_rank} passes 65535; choose a lower port",
            base.port()
        )
    })?;
    Ok(SocketAddr::new(base.ip(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback_and_other_interfaces_are_explicit() {
        assert_eq!(
            parse_listen("9464"),
            Ok("127.0.0.1:9464".parse().unwrap_or_else(|_| unreachable!()))
        );
        assert_eq!(
            parse_listen("0.0.0.0:9464").map(|a| a.ip().is_unspecified()),
            Ok(true)
        );
        assert_eq!(parse_listen("[::1]:0").map(|a| a.port()), Ok(0));
        for bad in ["", "localhost:9464", "70000", "9464:", "1.2.3.4", "+9464"] {
            let e = parse_listen(bad).err().unwrap_or_default();
            assert!(e.contains("allowed: PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn each_rank_of_a_host_gets_the_port_plus_its_local_rank() {
        let base: SocketAddr = "127.0.0.1:9464".parse().unwrap_or_else(|_| unreachable!());
        assert_eq!(rank_address(base, 0).map(|a| a.port()), Ok(9464));
        assert_eq!(rank_address(base, 3).map(|a| a.port()), Ok(9467));
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap_or_else(|_| unreachable!());
        assert_eq!(rank_address(any, 5).map(|a| a.port()), Ok(0));
        let top: SocketAddr = "127.0.0.1:65535".parse().unwrap_or_else(|_| unreachable!());
        assert!(rank_address(top, 1).is_err());
    }
}

"""Hostile clients beside the 10 Hz scraper, until the file named by argv[2]
exists: one that sends a request and never reads, one that sends half a
request head, one that sends nothing. Each one the server closes is opened
again at once. Prints how often the server cut each kind (the endpoint's
limits: 5 s for a request head, 60 s per connection)."""
import socket, sys, os, time

host, port = sys.argv[1].rsplit(":", 1)
stop = sys.argv[2]
KINDS = {
    "never-reads": b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
    "half-head": b"GET /metrics HTTP/1.1\r\nHo",
    "silent": b"",
}


def connect(kind):
    s = socket.create_connection((host, int(port)), timeout=1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    if KINDS[kind]:
        s.sendall(KINDS[kind])
    s.setblocking(False)
    return s


def closed_by_peer(s):
    """Whether the peer closed this socket (state CLOSE_WAIT, 08, in /proc/net/tcp)."""
    port = s.getsockname()[1]
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if int(f[1].rsplit(":", 1)[1], 16) == port:
                return f[3] == "08"
    return True  # gone from the table: closed


socks, cuts, opened = {}, {k: 0 for k in KINDS}, {k: 0 for k in KINDS}
held, since = [], 0.0
while not os.path.exists(stop):
    for kind in KINDS:
        s = socks.get(kind)
        if s is None:
            try:
                socks[kind] = connect(kind)
                opened[kind] += 1
                if kind == "never-reads":
                    since = time.monotonic()
            except OSError:
                pass  # not listening yet, or the run has ended
            continue
        if kind == "never-reads":
            # It never reads, so the answer stays queued: the server's
            # close shows only in the socket's TCP state (CLOSE_WAIT).
            if not closed_by_peer(s):
                continue
        else:
            try:
                if s.recv(65536) != b"":
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
        s.close()
        socks[kind] = None
        cuts[kind] += 1
        if kind == "never-reads":
            held.append(time.monotonic() - since)
    time.sleep(0.2)
print("stuck clients: " + ", ".join(f"{k} opened {opened[k]} cut {cuts[k]}" for k in KINDS)
      + "; never-reads held " + (", ".join(f"{h:.1f}" for h in held) or "-") + " s before each cut")

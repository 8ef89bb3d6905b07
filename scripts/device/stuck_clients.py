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


socks, cuts, opened = {}, {k: 0 for k in KINDS}, {k: 0 for k in KINDS}
while not os.path.exists(stop):
    for kind in KINDS:
        s = socks.get(kind)
        if s is None:
            try:
                socks[kind] = connect(kind)
                opened[kind] += 1
            except OSError:
                pass  # not listening yet, or the run has ended
            continue
        if kind == "never-reads":
            # Peek without consuming: only a closed connection ends it.
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    raise ConnectionResetError
            except BlockingIOError:
                continue
            except OSError:
                pass
            else:
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
    time.sleep(0.2)
print("stuck clients: " + ", ".join(f"{k} opened {opened[k]} cut {cuts[k]}" for k in KINDS))

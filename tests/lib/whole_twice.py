#!/usr/bin/env python3
# A request the server refuses, sent as a reverse proxy sends it: headers
# and the whole body at once, without "Expect: 100-continue" (nginx never
# forwards it).  An answer before the body, with the connection closed on
# it unread, reached nginx as a reset and its client as a 502, which the
# clients take for a server away and try again (an oversized report or
# upload, a wrong ingest key).  Sent twice on one connection: each must be
# answered STATUS, with TEXT in the answer, after its body.
#   whole_twice.py PORT PATH HEADER BODY STATUS TEXT [METHOD]
# HEADER: one "Name: value" line (the key or token); BODY: @FILE, or a
# number of bytes of "x"; METHOD: POST unless given.  Prints "STATUS
# twice", else exits non-zero with what came back.
import socket
import sys

port, path, header, body, status, text = sys.argv[1:7]
method = sys.argv[7] if len(sys.argv) > 7 else "POST"
if body.startswith("@"):
    with open(body[1:], "rb") as f:
        data = f.read()
else:
    data = b"x" * int(body)
req = (method.encode() + b" " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\n" + header.encode() +
       b"\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
s = socket.create_connection(("127.0.0.1", int(port)))
s.settimeout(60)
for i in range(2):
    s.sendall(req)
    a = b""
    while b"\r\n\r\n" not in a or not a.rstrip().endswith(b"}"):
        d = s.recv(65536)
        if not d:
            break
        a += d
    head = a.split(b"\r\n", 1)[0]
    if not head.startswith(b"HTTP/1.1 " + status.encode()) or text.encode() not in a:
        sys.exit("answer %d: %r" % (i, a[:300]))
print(status + " twice")

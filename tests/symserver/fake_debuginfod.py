#!/usr/bin/env python3
"""A debuginfod that misbehaves on demand, for the adverse cases that a
real debuginfod cannot be made to show.

    fake_debuginfod.py PORTFILE LOG MODEFILE BUILD_ID GOOD WRONG [ID2 FILE2 MODEFILE2]

Listens on a free port of 127.0.0.1 and writes it to PORTFILE.  Every
request line goes to LOG.  For GET /buildid/BUILD_ID/debuginfo it reads
MODEFILE (again for every request) and
    hang   answers nothing (holds the connection for 60 s),
    wrong  sends the file WRONG (not BUILD_ID's debug file),
    right  sends the file GOOD,
    NNN    (a number) answers HTTP status NNN with an empty body;
anything else is 404.  GET /buildid/ID2/debuginfo is answered the same
way by MODEFILE2, with FILE2 for right (a dwz file served only after a
switch).
"""
import http.server
import socketserver
import sys
import time

portfile, log, modefile, build_id, good, wrong = sys.argv[1:7]
served = {build_id: (modefile, good, wrong)}
if len(sys.argv) >= 10:
    served[sys.argv[7]] = (sys.argv[9], sys.argv[8], wrong)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with open(log, "a") as f:
            f.write("%.3f GET %s\n" % (time.time(), self.path))
        parts = self.path.split("/")
        if len(parts) == 4 and parts[1] == "buildid" and parts[3] == "debuginfo" and parts[2] in served:
            modefile, good, wrong = served[parts[2]]
            mode = open(modefile).read().strip()
            if mode.isdigit():
                self.send_response(int(mode))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode == "hang":
                time.sleep(60)
                return
            if mode in ("wrong", "right"):
                body = open(good if mode == "right" else wrong, "rb").read()
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()

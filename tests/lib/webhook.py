"""A webhook receiver for the notification tests.

    webhook.py OUT PORTFILE REFUSE

Listens on a free port of 127.0.0.1 (written to PORTFILE once it listens)
and appends one line per POST to OUT: "STATUS CONTENT-TYPE BODY".  It
answers 500 to the first request REFUSE names, 200 to the others:
  first         the first request of all (shows a retry of a single event)
  first-digest  the first digest ("event":"digest" in the body)
A number in OUT.mode, when the test writes one, is the status to answer
from then on (a 404, say, to show a refused event is not sent again).
"""
import http.server
import sys

out, portfile, refuse = sys.argv[1], sys.argv[2], sys.argv[3]
if refuse not in ("first", "first-digest"):
    sys.exit("webhook.py: REFUSE is first or first-digest, not " + refuse)
seen = {"all": 0, "digest": 0}


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        seen["all"] += 1
        if b'"event":"digest"' in body:
            seen["digest"] += 1
        first = seen["all"] == 1 if refuse == "first" else (
            b'"event":"digest"' in body and seen["digest"] == 1)
        code = 500 if first else 200
        try:
            code = int(open(out + ".mode").read())
        except (OSError, ValueError):
            pass
        with open(out, "ab") as f:
            f.write(b"%d %s %s\n" % (code, self.headers["Content-Type"].encode(), body))
        self.send_response(code)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), Hook)
open(portfile, "w").write(str(srv.server_port))
srv.serve_forever()

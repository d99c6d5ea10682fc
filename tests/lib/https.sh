# Shell helper for tests of clients' --cacert: an https stand-in whose
# certificate a private CA signed (here: itself, for localhost and
# 127.0.0.1), as a TLS proxy in front of a server would have.  Source it
# after defining fail().
#
# https_start DIR STATUS BODY [LOCATION] makes DIR/cert.pem (the CA to give
# --cacert) and DIR/key.pem, and starts a server on a free loopback port
# that reads each POST's body, appends the request's path to DIR/hits and
# answers STATUS with BODY (application/json), and a Location header when
# LOCATION is given.  Sets HTTPS_PID (the test's cleanup
# kills it) and HTTPS_BASE (https://127.0.0.1:PORT).  Needs openssl and
# python3: check for them first (the tests exit 77 without them).

HTTPS_PID= HTTPS_BASE=

https_start() { # https_start DIR STATUS BODY [LOCATION]
  local dir=$1
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null || fail "openssl"
  cat >"$dir/https.py" <<'PY'
import http.server, os, ssl, sys
d, status, body = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
loc = sys.argv[4] if len(sys.argv) > 4 else ""
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(d + "/hits", "a") as f: f.write(self.path + "\n")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if loc: self.send_header("Location", loc)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(d + "/cert.pem", d + "/key.pem")
s.socket = c.wrap_socket(s.socket, server_side=True)
with open(d + "/port.tmp", "w") as f: f.write(str(s.server_address[1]))
os.rename(d + "/port.tmp", d + "/port")
s.serve_forever()
PY
  : >"$dir/hits"
  rm -f "$dir/port"
  python3 "$dir/https.py" "$dir" "$2" "$3" "${4:-}" 2>"$dir/https.err" &
  HTTPS_PID=$!
  for _ in $(seq 1 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
  [ -s "$dir/port" ] || fail "the https stand-in did not start: $(cat "$dir/https.err")"
  HTTPS_BASE="https://127.0.0.1:$(cat "$dir/port")"
}

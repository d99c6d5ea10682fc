# Shell helper for tests that need a real PostgreSQL server.  Source it
# after setting `work` (a private temporary directory) and defining fail().
# pg_start creates a throwaway cluster in $work/pg, starts it on a free
# loopback port (trust authentication: nothing but this machine can reach
# it) and creates the database faultline.  Sets PGURL (a libpq URI) and
# PGPID; pg_stop (call it from the test's cleanup) stops the server, and
# pg_restart stops and starts it again on the same port.
#
# PostgreSQL refuses to run as root: as root, the cluster belongs to the
# user postgres (the Debian package creates it) and its programs run
# through runuser.

PGURL= PGPID= PGBIN= PGDIR=

pg_as() { # pg_as CMD...: CMD as the owner of the cluster
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_ctl_start() { # pg_ctl_start PORT: the cluster in $PGDIR on PORT; sets PGPID
  pg_as "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w -t 60 \
    -o "-p $1 -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PGDIR -c fsync=on" \
    start >"$PGDIR/pg_ctl.log" 2>&1 || return 1
  PGPID=$(head -1 "$PGDIR/data/postmaster.pid")
}

pg_start() {
  local b p attempt
  # The newest installed version (the glob sorts 9 after 16: compare).
  for b in /usr/lib/postgresql/*/bin; do
    [ -x "$b/initdb" ] && [ -x "$b/pg_ctl" ] || continue
    if [ -z "$PGBIN" ] || [ "$(basename "$(dirname "$b")")" -gt "$(basename "$(dirname "$PGBIN")")" ]; then
      PGBIN=$b
    fi
  done
  [ -n "$PGBIN" ] || fail "PostgreSQL is not installed (scripts/deps.sh installs package postgresql)"
  PGDIR=$work/pg
  mkdir -p "$PGDIR" || fail "cannot create $PGDIR"
  if [ "$(id -u)" = 0 ]; then
    chmod a+x "$work" && chown postgres: "$PGDIR" || fail "cannot hand $PGDIR to postgres"
  fi
  # --no-sync: only for initdb's own files, the cluster is thrown away;
  # the server itself runs with fsync on, as in production.
  pg_as "$PGBIN/initdb" -D "$PGDIR/data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
    >"$PGDIR/initdb.log" 2>&1 || fail "initdb failed: $(tail -5 "$PGDIR/initdb.log")"
  for attempt in 1 2 3 4 5 6 7 8; do
    p=$((20000 + (RANDOM * 7 + attempt * 131) % 40000))
    ss -ltnH "sport = :$p" 2>/dev/null | grep -q . && continue
    if pg_ctl_start "$p"; then
      pg_as "$PGBIN/createdb" -h 127.0.0.1 -p "$p" -U postgres faultline \
        >"$PGDIR/createdb.log" 2>&1 || { pg_stop; fail "createdb failed: $(cat "$PGDIR/createdb.log")"; }
      PGURL="postgres://postgres@127.0.0.1:$p/faultline"
      return 0
    fi
    # Not started: someone took the port meanwhile (try another), or a
    # real failure (say so).
    pg_as "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1
    grep -qiE "could not bind|address already in use|could not create any TCP/IP sockets" \
      "$PGDIR/log" 2>/dev/null || fail "PostgreSQL did not start: $(tail -5 "$PGDIR/log" 2>/dev/null)"
  done
  fail "PostgreSQL did not start: no free port"
}

pg_stop() {
  [ -n "$PGPID" ] && pg_as "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null 2>&1
  PGPID=
}

# pg_restart: the same cluster stopped and started again on its port, as
# a database server restarts under its clients.
pg_restart() {
  local p=${PGURL##*:}
  p=${p%%/*}
  pg_stop
  pg_ctl_start "$p" || fail "PostgreSQL did not restart: $(tail -5 "$PGDIR/log" 2>/dev/null)"
}

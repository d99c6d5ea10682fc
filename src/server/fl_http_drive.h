/*
 * fl_http_drive.h - the HTTP layer of `faultline serve` (http.c) run by its
 * caller: one loop, no thread and no listening socket.  The caller hands
 * it connected stream sockets and runs its passes; everything behind the
 * handlers -- routes, limits, multipart, gzip, the writer and the store --
 * is the server's own.  For the fuzzer (fuzz/server/fuzz_http.c), which
 * needs to know when the server has done all it will do with the bytes it
 * was sent, and so cannot use the server's own threads.
 *
 * Not thread-safe: one thread makes every call on an fl_http started
 * here, for as long as it lives (the writer's thread answers through the
 * loop's eventfd, as in the server).
 */
#ifndef FL_HTTP_DRIVE_H
#define FL_HTTP_DRIVE_H

#include "fl_serve.h"

/* As fl_http_start(), without listening (cfg->host, cfg->port and
 * cfg->threads are not used).  The caller keeps owning s, q, w and m,
 * which must outlive the result; stop it with fl_http_stop().  NULL with
 * err filled on failure. */
fl_http *fl_http_drive_start(const fl_http_config *cfg, fl_store *s, fl_queue *q, fl_writer *w,
                             fl_metrics *m, char *err, size_t errlen);

/* Serve the connected stream socket fd (a socketpair end will do): taken
 * -- the server closes it when the connection ends, or at once when this
 * fails.  0, or -1 (over the connection limit, out of memory). */
int fl_http_drive_add(fl_http *h, int fd);

/* One pass of the loop: read what the sockets have, call the handlers,
 * hand completed reports to the writer, send what can be sent.  When
 * requests wait for the writer, then waits up to wait_ms for its answer
 * (or a socket).  Returns 1 while the server has work of its own (data
 * read and not handled yet, requests with the writer), 0 when it only
 * waits for its clients (to send more, or to read what it sent), -1 when
 * waiting failed. */
int fl_http_drive_run(fl_http *h, int wait_ms);

/* Open connections, all loops together (also of a listening fl_http). */
unsigned fl_http_connections(fl_http *h);

#endif

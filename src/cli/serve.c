/* SPDX-License-Identifier: MIT */
/* serve.c: `pure serve`: a listener offering the built-in services — drain (count messages and
 * bytes, confirm the count when the peer finishes), echo (send every message back) and sink
 * (discard) — until SIGINT or SIGTERM, then a graceful close of every link. SIGUSR2 drains it
 * (pure_ctx_drain: a fleet's server hands its clients to the others and takes no new links). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char serve_help[] =
    "usage: pure serve --listen ADDR:PORT (--key FILE | --ephemeral)\n"
    "                  [--allow FILE | --allow-any] [--silent] [--services LIST]\n"
    "                  [--keepalive SECONDS] [--stats-every SECONDS] [--threads N]\n"
    "                  [--server-id N [--server-id-bits B]] [--moved-on-stop] [--verbose]\n"
    "\n"
    "Accepts links on a UDP socket and serves them until SIGINT or SIGTERM, then closes\n"
    "every link gracefully and exits 0. SIGUSR2 drains it for a fleet (docs/fleet.md):\n"
    "every open link closes with Pure's \"moved\" code (clients see PURE_EMOVED: connect\n"
    "again through the fleet's address, resend what was not acknowledged) and new links\n"
    "are refused with it, while the server runs on until SIGINT or SIGTERM.\n"
    "First prints one JSON line on stdout:\n"
    "  {\"port\": N, \"public_key\": \"...\"}\n"
    "(clients pass public_key as --peer-key).\n"
    "\n"
    "  --listen ADDR:PORT  address to bind: 127.0.0.1:4433, [::1]:4433, 0.0.0.0:0 (port 0:\n"
    "                      any free port, printed in the JSON line); [::]:PORT takes IPv4 too\n"
    "  --key FILE          this server's private key (made by pure keygen)\n"
    "  --ephemeral         a new random key for this run instead of --key\n"
    "  --allow FILE        accept only clients whose public key is listed in FILE (one\n"
    "                      pure-pub:... key per line; # starts a comment)\n"
    "  --allow-any         accept any client key (the default with --ephemeral; with --key,\n"
    "                      one of --allow/--allow-any is required)\n"
    "  --silent            answer nothing to a client that does not know this server's public\n"
    "                      key or whose key is not allowed (no REJECT, no refusal): a probe\n"
    "                      cannot tell a Pure server is there\n"
    "  --services LIST     comma-separated services to offer (default drain,echo,sink):\n"
    "                        drain  counts messages and body bytes; when the client finishes\n"
    "                               its stream, replies with one 16-byte message (u64 count,\n"
    "                               u64 bytes, big-endian) and finishes\n"
    "                        echo   sends every message back, in order; finishes after the\n"
    "                               client finishes and every echo is out\n"
    "                        sink   discards messages; finishes when the client finishes\n"
    "  --keepalive SECONDS send a keepalive PING on each idle link after SECONDS of quiet\n"
    "                      (default 0: none; set it on one side of a link only)\n"
    "  --stats-every SECONDS  every SECONDS, JSON lines on stdout: one per open link\n"
    "                      {\"stats\": \"link\", \"t\": S, \"id\": N, \"service\": ..., \"peer\": ...,\n"
    "                      \"messages_received\": N, \"bytes_received\": N, \"messages_sent\": N,\n"
    "                      \"messages_acked\": N, \"backlog\": N, \"queued\": N, \"rtt_us\": X,\n"
    "                      \"packets_lost\": N}, then one total {\"stats\": \"total\", \"t\": S,\n"
    "                      \"links\": N, \"accepted\": N, \"closed\": N, \"messages_received\": N,\n"
    "                      \"bytes_received\": N, \"datagrams_in\": N, \"datagrams_out\": N,\n"
    "                      \"handshakes_refused\": N, \"dropped\": N, \"core_links\": N,\n"
    "                      \"handshakes_accepted\": N, \"cookies_sent\": N, then the guard\n"
    "                      counters of pure_guard_stats: \"dh_ops\", \"inits_replayed\",\n"
    "                      \"inits_throttled\", \"inits_half_open_cap\", \"inits_bad_mac\",\n"
    "                      \"inits_silent\", \"inits_duplicate\", \"cookie_replies_bad\",\n"
    "                      \"rejects_bad\", \"failed_opens\", \"links_integrity_closed\",\n"
    "                      \"rx_memory\", \"rx_memory_peak\", \"rx_memory_stalls\",\n"
    "                      \"inits_other_version\"} (inits_other_version: clients of another\n"
    "                      protocol version, each answered with a VERSION reply; t: seconds\n"
    "                      since start; totals count closed links too; core_links: every\n"
    "                      link the core holds, half-open and closing ones included)\n"
    "  --threads N         serve with N threads (1..256; default: the number of online\n"
    "                      CPUs): each its own context and its own socket on the same port\n"
    "                      (SO_REUSEPORT); a BPF program steers each datagram to the thread\n"
    "                      whose link it names, so a link stays on its thread even when its\n"
    "                      peer's address changes, and new links spread over the threads.\n"
    "                      The server's budgets are shared, not multiplied: each thread\n"
    "                      holds 1/N of the receive memory, links, half-open handshakes\n"
    "                      and handshake load one context would.\n"
    "                      With N > 1 the first line also has \"threads\": N; --stats-every\n"
    "                      adds one line per thread, {\"stats\": \"thread\", \"thread\": I, ...}\n"
    "                      with the total line's fields plus \"dropped_unknown_link\",\n"
    "                      \"handed_off\", \"handed_in\" and \"handoff_dropped\" (datagrams of a\n"
    "                      GRO/GSO train passed to the thread owning them), link lines carry\n"
    "                      \"thread\": I, and the total line (its t that of the latest thread\n"
    "                      line) sums the threads and has \"threads\": N. --threads 1: one\n"
    "                      socket, no steering, output as without the flag\n"
    "  --server-id N       one server of a fleet behind one address (docs/fleet.md): N\n"
    "                      (below 2^B) is written into every link index this server\n"
    "                      draws, just below the thread bits, so a director routes each\n"
    "                      packet of a link to the server that owns it\n"
    "  --server-id-bits B  the bits --server-id takes (1..8; default 8: up to 256 servers)\n"
    "  --moved-on-stop     on SIGINT/SIGTERM, drain: close every link at once with Pure's\n"
    "                      \"moved\" code, which clients see as PURE_EMOVED (go elsewhere,\n"
    "                      resend what was not acknowledged), instead of a graceful close\n"
    "  --verbose           on stderr: a line per link opened, and per link closed with its\n"
    "                      counters and the loop's (RTT, cwnd, losses, datagrams per call);\n"
    "                      on exit, the listener's counters: datagrams, handshakes, cookies,\n"
    "                      and what was dropped (malformed, failed authentication, replays,\n"
    "                      unknown links)\n"
    "\n"
    "exit codes: 0 stopped by a signal; 1 runtime failure (socket error);\n"
    "            2 usage error (bad flag, address, key or allow file, address in use)\n";

enum svc_kind {
    SVC_DRAIN = 1,
    SVC_ECHO = 2,
    SVC_SINK = 4
};

static const struct {
    const char *name;
    enum svc_kind kind;
} services[] = {{"drain", SVC_DRAIN}, {"echo", SVC_ECHO}, {"sink", SVC_SINK}};

/* An echo held back by a full backlog, resent on on_writable. While any is queued the link's
 * receive is paused (pure_link_pause_recv), so the queue holds at most what the client had in
 * flight: its receive window. */
typedef struct qmsg {
    struct qmsg *next;
    size_t len;
    uint32_t channel; /* the echo goes back on the request's channel */
    uint8_t data[];
} qmsg;

/* Echo queues beyond this close the link (a safety net: the pause bounds them well below). */
#define QUEUE_MAX (64u << 20)

typedef struct srv_link {
    struct srv_link *prev, *next;
    struct server *srv;
    pure_link *link;
    enum svc_kind kind;
    uint64_t id; /* order of acceptance, from 1: names the link in --stats-every */
    uint64_t messages;
    qmsg *qhead, *qtail;
    /* apart from messages: side by side, gcc -O2 counts the two with SSE through the stack, 6
     * instructions a message where two adds do */
    uint64_t bytes;
    size_t qbytes;
    int finish_when_empty;
    /* Set by on_closed: the link is gone and sl->link must never be touched again. The struct
     * itself lives on in srv->dead until the outermost callback returns, because a call made
     * from a callback (pure_link_send, _close, _finish) may run on_closed before it returns to
     * the callback, which still holds sl. */
    int closed;
} srv_link;

typedef struct server {
    pure_ctx *ctx;
    pure_loop *loop;
    srv_link *links;
    srv_link *dead; /* closed links, freed by the outermost callback (see srv_link.closed) */
    int depth;      /* callbacks under way (they nest) */
    int verbose;
    int moved_on_stop; /* --moved-on-stop: a drain tells clients PURE_EMOVED */
    int drained;       /* SIGUSR2 came and pure_ctx_drain ran */
    uint64_t accepted, closed;
    /* received on closed links; collect() adds the open links' own counts (one count a message
     * instead of two: on_message is the drain's cost per message) */
    uint64_t messages, bytes;
    /* --threads N > 1: this server is thread `thread` of `threads`, all sharing `shared` */
    unsigned thread, threads;
    struct shared *shared;
    pthread_t tid;
    int rc; /* the thread's loop result */
} server;

static void sl_free_queue(srv_link *sl)
{
    while (sl->qhead) {
        qmsg *q = sl->qhead;
        sl->qhead = q->next;
        free(q);
    }
    sl->qtail = NULL;
    sl->qbytes = 0;
}

/* Sends the queue's head messages until the backlog is full again, then finishes if asked. */
static void sl_flush(srv_link *sl)
{
    while (sl->qhead && !sl->closed) {
        qmsg *q = sl->qhead;
        int64_t rc = pure_link_send_on(sl->link, q->channel, q->data, q->len);
        if (rc == PURE_EAGAIN)
            return;
        if (rc < 0 && pure_err_is_fatal((int)rc))
            return; /* on_closed follows or has run */
        sl->qhead = q->next;
        sl->qbytes -= q->len;
        free(q);
    }
    if (sl->closed)
        return;
    sl->qtail = NULL;
    pure_link_resume_recv(sl->link); /* the replies are out: take requests again */
    if (sl->finish_when_empty) {
        sl->finish_when_empty = 0;
        pure_link_finish(sl->link);
    }
}

/* Sends a reply on `channel` now, or queues it behind earlier ones: nothing is ever dropped. */
static void sl_send(srv_link *sl, uint32_t channel, const uint8_t *d, size_t n)
{
    if (!sl->qhead) {
        int64_t rc = pure_link_send_on(sl->link, channel, d, n);
        if (rc >= 0 || rc != PURE_EAGAIN)
            return; /* sent, or the link is closing: on_closed tells */
    }
    if (sl->qbytes + n > QUEUE_MAX) {
        pure_link_abort(sl->link, PURE_CLOSE_APP,
                        "echo backlog over 64 MiB: the client is not reading replies");
        return;
    }
    pure_link_pause_recv(sl->link); /* no new credit until the queue is out */
    qmsg *q = malloc(sizeof *q + n);
    if (!q) {
        pure_link_abort(sl->link, PURE_CLOSE_APP, "server out of memory");
        return;
    }
    q->next = NULL;
    q->len = n;
    q->channel = channel;
    memcpy(q->data, d, n);
    if (sl->qtail)
        sl->qtail->next = q;
    else
        sl->qhead = q;
    sl->qtail = q;
    sl->qbytes += n;
}

static void log_link(const srv_link *sl, const char *what, const char *detail)
{
    if (!sl->srv->verbose)
        return;
    char addr[PURE_ADDR_STRLEN], key[CLI_KEY_TEXT];
    pure_addr_to_string(pure_link_peer_addr(sl->link), addr, sizeof addr);
    cli_key_text(key, pure_link_peer_key(sl->link), 0);
    fprintf(stderr, "pure serve: %s %s from %s key %s: %llu messages, %llu bytes%s%s\n", what,
            sl->kind == SVC_DRAIN  ? "drain"
            : sl->kind == SVC_ECHO ? "echo"
                                   : "sink",
            addr, key, (unsigned long long)sl->messages, (unsigned long long)sl->bytes,
            detail ? ": " : "", detail ? detail : "");
}

static int on_accept(pure_link *link, const char *service, const uint8_t *key, void *user)
{
    server *srv = user;
    enum svc_kind kind = 0;
    for (size_t i = 0; i < sizeof services / sizeof *services; i++)
        if (strcmp(service, services[i].name) == 0)
            kind = services[i].kind;
    if (!kind)
        return PURE_EREFUSED; /* the core only offers registered names; be sure anyway */
    srv_link *sl = calloc(1, sizeof *sl);
    if (!sl)
        return PURE_ENOMEM;
    sl->srv = srv;
    sl->link = link;
    sl->kind = kind;
    sl->next = srv->links;
    if (srv->links)
        srv->links->prev = sl;
    srv->links = sl;
    srv->accepted++;
    sl->id = srv->accepted;
    pure_link_set_user(link, sl);
    log_link(sl, "accepted", NULL);
    return 0;
}

static void free_dead(server *srv)
{
    while (srv->dead) {
        srv_link *sl = srv->dead;
        srv->dead = sl->next;
        free(sl);
    }
}

/* The link's state for a callback, or NULL if the link is already closed: the core must not call
 * after on_closed, but if it does, serve must not crash (it once did, on SIGINT). A callback
 * that gets sl brackets its work with leave(srv), which frees closed links' state once no
 * callback holds any. */
static srv_link *enter(void *user)
{
    srv_link *sl = user;
    if (!sl || sl->closed)
        return NULL;
    sl->srv->depth++;
    return sl;
}

static void leave(server *srv)
{
    if (--srv->depth == 0)
        free_dead(srv);
}

/* The echo's part of got_message, out of line so that the drain's callback saves no registers. */
static __attribute__((noinline)) void echo_message(srv_link *sl, uint32_t channel, const uint8_t *d,
                                                   size_t n)
{
    server *srv = sl->srv;
    srv->depth++;
    sl_send(sl, channel, d, n);
    leave(srv);
}

/* A message on any channel: counted; the echo service sends it back on the same channel. */
/* Both message callbacks' body, inlined into each: the drain's server runs it once a message, and
 * channel 0's callback calling the other cost 4 instructions a message (callgrind). */
static inline void got_message(void *user, uint32_t channel, const uint8_t *d, size_t n)
{
    srv_link *sl = user;
    if (!sl || sl->closed)
        return;
    sl->messages++;
    sl->bytes += n;
    /* Only the echo calls back into Pure (which may close the link under it), so only the echo
     * needs enter/leave: for the drain and the sink they were half of this callback's ~33
     * instructions a message (callgrind). */
    if (sl->kind == SVC_ECHO)
        echo_message(sl, channel, d, n);
}

static void on_channel_message(pure_link *link, void *user, uint32_t channel, const uint8_t *d,
                               size_t n)
{
    got_message(user, channel, d, n);
}

static void on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    got_message(user, 0, d, n);
}

static void on_writable(pure_link *link, void *user)
{
    srv_link *sl = enter(user);
    if (!sl)
        return;
    server *srv = sl->srv;
    sl_flush(sl);
    leave(srv);
}

static void on_peer_finished(pure_link *link, void *user)
{
    srv_link *sl = enter(user);
    if (!sl)
        return;
    server *srv = sl->srv;
    if (sl->kind == SVC_DRAIN) {
        uint8_t reply[16];
        for (int i = 0; i < 8; i++) {
            reply[i] = (uint8_t)(sl->messages >> (56 - 8 * i));
            reply[8 + i] = (uint8_t)(sl->bytes >> (56 - 8 * i));
        }
        sl_send(sl, 0, reply, sizeof reply);
    }
    if (!sl->closed) { /* else sl_send closed the link */
        if (sl->qhead)
            sl->finish_when_empty = 1;
        else
            pure_link_finish(link);
    }
    leave(srv);
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    srv_link *sl = enter(user);
    if (!sl)
        return;
    char why[320];
    if (info->error == 0)
        snprintf(why, sizeof why, "closed%s%s", *info->reason ? " by the peer: " : "",
                 info->reason);
    else
        snprintf(why, sizeof why, "%s%s%s", pure_strerror(info->error), *info->reason ? ": " : "",
                 info->reason);
    log_link(sl, "closed", why);
    server *srv = sl->srv;
    if (srv->verbose && srv->loop) { /* no loop while pure_ctx_free closes the last links */
        pure_link_stats ls;
        pure_link_stats_get(link, &ls);
        cli_print_stats("serve", &ls, srv->loop);
    }
    srv->closed++;
    srv->messages += sl->messages;
    srv->bytes += sl->bytes;
    if (sl->prev)
        sl->prev->next = sl->next;
    else
        srv->links = sl->next;
    if (sl->next)
        sl->next->prev = sl->prev;
    sl_free_queue(sl);
    sl->closed = 1;
    sl->link = NULL;
    sl->next = srv->dead;
    srv->dead = sl;
    pure_link_set_user(link, NULL);
    leave(srv);
}

static const pure_callbacks callbacks = {
    .on_accept = on_accept,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_channel_message = on_channel_message,
    .on_peer_finished = on_peer_finished,
    .on_closed = on_closed,
};

static const char *kind_name(enum svc_kind k)
{
    return k == SVC_DRAIN ? "drain" : k == SVC_ECHO ? "echo" : "sink";
}

/* The guard counters (pure_guard_stats) in the order of pure.h, named as there: the total line
 * prints every one (a field added to the struct goes here too). */
#define GUARD(f)                                                                                   \
    {                                                                                              \
#f, offsetof(pure_guard_stats, f)                                                          \
    }
static const struct {
    const char *name;
    size_t offset;
} guard_fields[] = {
    GUARD(dh_ops),
    GUARD(inits_replayed),
    GUARD(inits_throttled),
    GUARD(inits_half_open_cap),
    GUARD(inits_bad_mac),
    GUARD(inits_silent),
    GUARD(inits_duplicate),
    GUARD(cookie_replies_bad),
    GUARD(rejects_bad),
    GUARD(failed_opens),
    GUARD(links_integrity_closed),
    GUARD(rx_memory),
    GUARD(rx_memory_peak),
    GUARD(rx_memory_stalls),
    GUARD(inits_other_version),
};
#undef GUARD

/* The counters of the total line, in its order (a thread's line has them too). */
enum {
    F_LINKS,
    F_ACCEPTED,
    F_CLOSED,
    F_MESSAGES,
    F_BYTES,
    F_DGRAMS_IN,
    F_DGRAMS_OUT,
    F_REFUSED,
    F_DROPPED,
    F_CORE_LINKS,
    F_HS_ACCEPTED,
    F_COOKIES,
    F_GUARD
};
#define N_GUARD (sizeof guard_fields / sizeof *guard_fields)
#define N_FIELDS (F_GUARD + N_GUARD)
/* and, with threads, a thread's own: */
enum {
    X_UNKNOWN_LINK,
    X_HANDED_OFF,
    X_HANDED_IN,
    X_HANDOFF_DROPPED,
    N_EXTRA
};
static const char *const field_names[F_GUARD] = {"links",
                                                 "accepted",
                                                 "closed",
                                                 "messages_received",
                                                 "bytes_received",
                                                 "datagrams_in",
                                                 "datagrams_out",
                                                 "handshakes_refused",
                                                 "dropped",
                                                 "core_links",
                                                 "handshakes_accepted",
                                                 "cookies_sent"};
static const char *const extra_names[N_EXTRA] = {"dropped_unknown_link", "handed_off", "handed_in",
                                                 "handoff_dropped"};

typedef struct counters {
    uint64_t v[N_FIELDS];
    uint64_t x[N_EXTRA];
} counters;

/* State the threads of --threads N share: their latest counters, for the total line. */
typedef struct shared {
    pthread_mutex_t mu;
    unsigned threads;
    counters *latest; /* per thread */
    uint64_t *tick;   /* the stats tick each thread reported last */
    double *t;
    uint64_t printed; /* the last tick whose total is out */
    int failed;       /* a thread's socket failed: stop them all */
    int stopping;     /* the main thread is stopping every loop */
    int drain;        /* SIGUSR2 came: every thread drains its context */
    uint64_t stats_every, t_start;
} shared;

static void collect(const server *srv, counters *c)
{
    memset(c, 0, sizeof *c);
    uint64_t messages = srv->messages, bytes = srv->bytes;
    for (const srv_link *sl = srv->links; sl; sl = sl->next) {
        c->v[F_LINKS]++;
        messages += sl->messages;
        bytes += sl->bytes;
    }
    pure_ctx_stats cs;
    pure_ctx_stats_get(srv->ctx, &cs);
    pure_guard_stats gs;
    memset(&gs, 0, sizeof gs);
    pure_ctx_guard_stats_get(srv->ctx, &gs, sizeof gs);
    c->v[F_ACCEPTED] = srv->accepted;
    c->v[F_CLOSED] = srv->closed;
    c->v[F_MESSAGES] = messages;
    c->v[F_BYTES] = bytes;
    c->v[F_DGRAMS_IN] = cs.datagrams_in;
    c->v[F_DGRAMS_OUT] = cs.datagrams_out;
    c->v[F_REFUSED] = cs.handshakes_refused;
    c->v[F_DROPPED] =
        cs.dropped_malformed + cs.dropped_auth + cs.dropped_replay + cs.dropped_unknown_link;
    c->v[F_CORE_LINKS] = cs.links;
    c->v[F_HS_ACCEPTED] = cs.handshakes_accepted;
    c->v[F_COOKIES] = cs.cookies_sent;
    for (size_t i = 0; i < N_GUARD; i++)
        memcpy(&c->v[F_GUARD + i], (const uint8_t *)&gs + guard_fields[i].offset, sizeof(uint64_t));
    pure_loop_steer_stats ss;
    pure_loop_steer_stats_get(srv->loop, &ss, sizeof ss);
    c->x[X_UNKNOWN_LINK] = cs.dropped_unknown_link;
    c->x[X_HANDED_OFF] = ss.handed_off;
    c->x[X_HANDED_IN] = ss.handed_in;
    c->x[X_HANDOFF_DROPPED] = ss.handoff_dropped;
}

/* One JSON line: {"stats": KIND, "t": T, [WHO: N,] the fields[, the extras]}. */
static void print_counters(const char *kind, double t, const char *who, unsigned n,
                           const counters *c, int extras)
{
    printf("{\"stats\": \"%s\", \"t\": %.3f", kind, t);
    if (who)
        printf(", \"%s\": %u", who, n);
    for (size_t i = 0; i < N_FIELDS; i++)
        printf(", \"%s\": %llu", i < F_GUARD ? field_names[i] : guard_fields[i - F_GUARD].name,
               (unsigned long long)c->v[i]);
    for (size_t i = 0; extras && i < N_EXTRA; i++)
        printf(", \"%s\": %llu", extra_names[i], (unsigned long long)c->x[i]);
    printf("}\n");
}

/* --stats-every: a JSON line per open link, then the totals, on stdout. With threads, this
 * thread's line; the thread that completes a tick also prints the total of every thread. */
static void print_stats(server *srv, uint64_t t_ns, uint64_t tick)
{
    double t = (double)t_ns / 1e9;
    char thread[32] = "";
    if (srv->threads > 1)
        snprintf(thread, sizeof thread, ", \"thread\": %u", srv->thread);
    flockfile(stdout); /* a thread's lines stay together */
    for (const srv_link *sl = srv->links; sl; sl = sl->next) {
        pure_link_stats ls;
        char addr[PURE_ADDR_STRLEN];
        pure_link_stats_get(sl->link, &ls);
        pure_addr_to_string(pure_link_peer_addr(sl->link), addr, sizeof addr);
        printf("{\"stats\": \"link\", \"t\": %.3f%s, \"id\": %llu, \"service\": \"%s\", "
               "\"peer\": \"%s\", \"messages_received\": %llu, \"bytes_received\": %llu, "
               "\"messages_sent\": %llu, \"messages_acked\": %llu, \"backlog\": %llu, "
               "\"queued\": %llu, \"rtt_us\": %.1f, \"packets_lost\": %llu}\n",
               t, thread, (unsigned long long)sl->id, kind_name(sl->kind), addr,
               (unsigned long long)sl->messages, (unsigned long long)sl->bytes,
               (unsigned long long)ls.messages_sent, (unsigned long long)ls.messages_acked,
               (unsigned long long)pure_link_backlog(sl->link), (unsigned long long)sl->qbytes,
               (double)ls.rtt_ns / 1e3, (unsigned long long)ls.packets_lost);
    }
    counters c;
    collect(srv, &c);
    if (srv->threads <= 1) {
        print_counters("total", t, NULL, 0, &c, 0);
        funlockfile(stdout);
        fflush(stdout);
        return;
    }
    print_counters("thread", t, "thread", srv->thread, &c, 1);
    shared *sh = srv->shared;
    pthread_mutex_lock(&sh->mu);
    sh->latest[srv->thread] = c;
    sh->tick[srv->thread] = tick;
    sh->t[srv->thread] = t;
    uint64_t done = tick;
    for (unsigned i = 0; i < sh->threads; i++)
        if (sh->tick[i] < done)
            done = sh->tick[i];
    if (done > sh->printed) { /* every thread has reported this tick: the total */
        sh->printed = done;
        counters sum;
        memset(&sum, 0, sizeof sum);
        for (unsigned i = 0; i < sh->threads; i++) {
            for (size_t k = 0; k < N_FIELDS; k++)
                sum.v[k] += sh->latest[i].v[k];
            for (size_t k = 0; k < N_EXTRA; k++)
                sum.x[k] += sh->latest[i].x[k];
        }
        print_counters("total", t, "threads", sh->threads, &sum, 1);
    }
    pthread_mutex_unlock(&sh->mu);
    funlockfile(stdout);
    fflush(stdout);
}

/* Reads an allow file into the context. Returns 0 or CLI_USAGE (message printed). */
static int load_allow(pure_ctx *ctx, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pure serve: cannot read the --allow file %s: %s\n", path, strerror(errno));
        return CLI_USAGE;
    }
    char line[512];
    int lineno = 0, keys = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            continue;
        uint8_t key[PURE_KEY_LEN];
        int krc = cli_public_key_from_text(key, p);
        if (krc == CLI_KEY_WRONG_KIND) {
            fprintf(stderr,
                    "pure serve: %s line %d is a private key (pure-priv:...): list the "
                    "clients' public keys (pure pubkey < KEYFILE), and delete that line\n",
                    path, lineno);
            fclose(f);
            return CLI_USAGE;
        }
        if (krc != 0) {
            fprintf(stderr,
                    "pure serve: %s line %d is not a public key: expected pure-pub: and 44 base64 "
                    "characters (as printed by pure pubkey), one per line\n",
                    path, lineno);
            fclose(f);
            return CLI_USAGE;
        }
        if (pure_ctx_allow(ctx, key) != 0) {
            fclose(f);
            fprintf(stderr, "pure serve: out of memory reading %s\n", path);
            return CLI_FAIL;
        }
        keys++;
    }
    if (ferror(f)) { /* a directory opens, and its read fails (EISDIR): not an empty list */
        int err = errno;
        fclose(f);
        fprintf(stderr, "pure serve: cannot read the --allow file %s: %s\n", path, strerror(err));
        return CLI_USAGE;
    }
    fclose(f);
    if (keys == 0)
        fprintf(stderr, "pure serve: warning: %s lists no keys: every client will be refused\n",
                path);
    return 0;
}

/* Parses "drain,echo" into a mask. Returns 0 or CLI_USAGE. */
static int parse_services(const char *list, unsigned *mask)
{
    *mask = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned k = 0;
        for (size_t i = 0; i < sizeof services / sizeof *services; i++)
            if (strlen(services[i].name) == n && memcmp(p, services[i].name, n) == 0)
                k = services[i].kind;
        if (!k)
            return cli_usage("serve",
                             "unknown service '%.*s' in --services (known: drain, "
                             "echo, sink)",
                             (int)n, p);
        *mask |= k;
        p += n;
        if (*p == ',')
            p++;
    }
    if (!*mask)
        return cli_usage("serve", "--services lists no service");
    return 0;
}

/* What every thread's server is made from. */
typedef struct serve_opts {
    const char *listen, *allow;
    unsigned mask;
    int allow_any;
    uint64_t keepalive;
    int respond_to_unknown, verbose;
    uint64_t stats_every;
    unsigned server_id, server_id_bits; /* server_id_bits 0: not in a fleet */
    int moved_on_stop;
    uint8_t key[PURE_KEY_LEN];
} serve_opts;

/* The context of thread `thread` of `threads` (1: no index partition), with its services and
 * allow list. Returns 0 or a CLI exit code (message printed). */
static int server_init(server *srv, const serve_opts *o, unsigned thread, unsigned threads)
{
    memset(srv, 0, sizeof *srv);
    srv->verbose = o->verbose;
    srv->moved_on_stop = o->moved_on_stop;
    srv->thread = thread;
    srv->threads = threads;
    pure_settings st;
    pure_settings_default(&st);
    pure_settings_use_huge_pages(&st); /* a streaming link's ring: few page faults */
    memcpy(st.private_key, o->key, PURE_KEY_LEN);
    st.max_channels = PURE_MAX_CHANNELS; /* pure send --channel: any */
    st.allow_any = o->allow_any;
    st.keepalive = o->keepalive;
    st.respond_to_unknown = o->respond_to_unknown;
    st.callbacks = &callbacks;
    st.user = srv;
    if (threads > 1) { /* the whole server keeps one context's budgets (pure_loop.h) */
        pure_settings_set_thread(&st, thread, threads);
        pure_settings_share_budgets(&st, threads);
    }
    st.server_id_bits = o->server_id_bits;
    st.server_id = o->server_id;
    int rc = pure_ctx_new(&st, &srv->ctx);
    memset(st.private_key, 0, sizeof st.private_key);
    if (rc) {
        fprintf(stderr, "pure serve: cannot create the context: %s\n", pure_strerror(rc));
        return CLI_FAIL;
    }
    for (size_t i = 0; i < sizeof services / sizeof *services; i++)
        if ((o->mask & services[i].kind) && pure_ctx_add_service(srv->ctx, services[i].name))
            return CLI_FAIL;
    if (o->allow && (rc = load_allow(srv->ctx, o->allow)) != 0)
        return rc;
    return 0;
}

/* Graceful shutdown: every link sends what it had accepted and then CLOSE; give that up to a
 * second (a closing link lingers a few RTTs to repeat its CLOSE). */
static void server_shutdown(server *srv)
{
    if (srv->moved_on_stop) { /* a fleet's drain: every link told to go elsewhere, at once */
        pure_ctx_shutdown(srv->ctx, PURE_SHUTDOWN_ALL | PURE_SHUTDOWN_MOVED, pure_now());
        pure_loop_run(srv->loop, 0); /* one pass: sends the CLOSE packets */
        return;
    }
    for (srv_link *sl = srv->links, *next; sl; sl = next) {
        next = sl->next;
        pure_link_close(sl->link, 0, "server shutting down");
    }
    uint64_t until = pure_now() + 1000000000u;
    pure_ctx_stats cs;
    for (;;) {
        pure_ctx_stats_get(srv->ctx, &cs);
        uint64_t now = pure_now();
        if (cs.links == 0 || now >= until)
            break;
        if (pure_loop_run(srv->loop, until - now < 10000000u ? until - now : 10000000u))
            break;
    }
    /* A graceful close first sends everything the link had accepted, which can take longer
     * than the second: abort the links still at it, so their peers get a CLOSE now rather
     * than wait out their idle timeout. */
    for (srv_link *sl = srv->links, *next; sl; sl = next) {
        next = sl->next;
        pure_link_abort(sl->link, 0, "server shutting down");
    }
    pure_loop_run(srv->loop, 0); /* one pass: sends the CLOSE packets */
}

static void print_summary(const server *srv)
{
    pure_ctx_stats cst;
    pure_ctx_stats_get(srv->ctx, &cst);
    char who[32] = "";
    if (srv->threads > 1)
        snprintf(who, sizeof who, " thread %u", srv->thread);
    fprintf(stderr,
            "pure serve:%s stopped after %llu links; datagrams in %llu out %llu; handshakes "
            "accepted %llu refused %llu, cookies sent %llu; dropped: malformed %llu, "
            "failed authentication %llu, replayed %llu, unknown link %llu",
            who, (unsigned long long)srv->accepted, (unsigned long long)cst.datagrams_in,
            (unsigned long long)cst.datagrams_out, (unsigned long long)cst.handshakes_accepted,
            (unsigned long long)cst.handshakes_refused, (unsigned long long)cst.cookies_sent,
            (unsigned long long)cst.dropped_malformed, (unsigned long long)cst.dropped_auth,
            (unsigned long long)cst.dropped_replay, (unsigned long long)cst.dropped_unknown_link);
    if (srv->threads > 1) {
        pure_loop_steer_stats ss;
        pure_loop_steer_stats_get(srv->loop, &ss, sizeof ss);
        fprintf(stderr, "; handed off %llu, handed in %llu, hand-offs dropped %llu",
                (unsigned long long)ss.handed_off, (unsigned long long)ss.handed_in,
                (unsigned long long)ss.handoff_dropped);
    }
    fprintf(stderr, "\n");
}

static int shared_stopping(shared *sh)
{
    pthread_mutex_lock(&sh->mu);
    int stop = sh->failed || sh->stopping;
    pthread_mutex_unlock(&sh->mu);
    return stop;
}

/* SIGUSR2 with --threads 1 (with more threads the main thread waits for it: serve_threads). */
static volatile sig_atomic_t drain_signal;
static pure_loop *volatile drain_loop;

static void on_drain_signal(int sig)
{
    (void)sig;
    drain_signal = 1;
    pure_loop *l = drain_loop;
    if (l)
        pure_loop_stop(l);
}

static int drain_wanted(server *srv)
{
    if (srv->drained)
        return 0;
    if (!srv->shared)
        return drain_signal;
    pthread_mutex_lock(&srv->shared->mu);
    int d = srv->shared->drain;
    pthread_mutex_unlock(&srv->shared->mu);
    return d;
}

/* SIGUSR2: the fleet's drain (docs/fleet.md). The links close with "moved" at once and new ones
 * are refused with it; the server runs on (its indices still route here while the clients move)
 * until it is stopped. */
static void server_drain(server *srv)
{
    uint64_t open = srv->accepted - srv->closed; /* on_closed counts them as they go */
    srv->drained = 1;
    pure_ctx_drain(srv->ctx, pure_now());
    char who[32] = "";
    if (srv->threads > 1)
        snprintf(who, sizeof who, " thread %u", srv->thread);
    fprintf(stderr, "pure serve:%s draining: %llu links told to go elsewhere; new links refused\n",
            who, (unsigned long long)open);
}

/* Runs srv's loop until stopped, printing --stats-every lines on the way and draining on SIGUSR2.
 * Returns the loop's result (0: stopped). */
static int server_run(server *srv, uint64_t stats_every, uint64_t t_start)
{
    uint64_t next_stats = t_start + stats_every, tick = 0;
    for (;;) {
        uint64_t now = pure_now();
        if (stats_every && now >= next_stats) {
            while (next_stats <= now) { /* no burst of lines after a stall */
                next_stats += stats_every;
                tick++;
            }
            print_stats(srv, now - t_start, tick);
        }
        int rc = pure_loop_run(srv->loop, stats_every ? next_stats - now : PURE_LOOP_FOREVER);
        if (rc)
            return rc;
        if (cli_signals_received() || (srv->shared && shared_stopping(srv->shared)))
            return 0;
        if (drain_wanted(srv))
            server_drain(srv);
        else if (!stats_every)
            return 0; /* stopped, and not for a drain */
    }
}

static void print_listening(const server *srv, unsigned threads)
{
    char pub[CLI_KEY_TEXT];
    cli_key_text(pub, pure_ctx_public_key(srv->ctx), 0);
    if (threads > 1)
        printf("{\"port\": %u, \"public_key\": \"%s\", \"threads\": %u}\n",
               pure_loop_port(srv->loop), pub, threads);
    else
        printf("{\"port\": %u, \"public_key\": \"%s\"}\n", pure_loop_port(srv->loop), pub);
    fflush(stdout);
}

/* --threads 1: one context, one loop, on this thread. */
static int serve_one(const serve_opts *o)
{
    server srv;
    int rc = server_init(&srv, o, 0, 1);
    if (rc) {
        pure_ctx_free(srv.ctx);
        return rc;
    }
    rc = pure_loop_new(srv.ctx, o->listen, &srv.loop);
    if (rc) {
        fprintf(stderr, "pure serve: cannot listen on %s: %s\n", o->listen,
                rc == PURE_EIO ? strerror(errno) : pure_strerror(rc));
        pure_ctx_free(srv.ctx);
        return rc == PURE_EIO ? CLI_USAGE : CLI_FAIL;
    }
    cli_stop_on_signals(srv.loop);
    drain_loop = srv.loop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_drain_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    print_listening(&srv, 1);
    rc = server_run(&srv, o->stats_every, pure_now());
    int code = CLI_OK;
    if (rc) {
        perror("pure serve: the socket failed");
        code = CLI_FAIL;
    } else {
        server_shutdown(&srv);
    }
    cli_stop_on_signals(NULL);
    drain_loop = NULL;
    if (o->verbose)
        print_summary(&srv);
    pure_loop_free(srv.loop);
    srv.loop = NULL;
    pure_ctx_free(srv.ctx); /* runs on_closed for links that did not finish closing */
    return code;
}

/* A thread of --threads N: its loop until stopped, then its own graceful shutdown. */
static void *server_thread(void *arg)
{
    server *srv = arg;
    srv->rc = server_run(srv, srv->shared->stats_every, srv->shared->t_start);
    if (srv->rc) {
        perror("pure serve: the socket failed");
        pthread_mutex_lock(&srv->shared->mu);
        srv->shared->failed = 1;
        pthread_mutex_unlock(&srv->shared->mu);
        kill(getpid(), SIGUSR1); /* wakes the main thread */
    } else {
        server_shutdown(srv);
    }
    return NULL;
}

/* --threads N > 1: N contexts and a loop group, a thread each; this thread waits for SIGINT or
 * SIGTERM (or a thread's failure), then stops them all. */
static int serve_threads(const serve_opts *o, unsigned n)
{
    server *srv = calloc(n, sizeof *srv);
    pure_ctx **ctxs = calloc(n, sizeof *ctxs);
    shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    sh.threads = n;
    sh.stats_every = o->stats_every;
    sh.latest = calloc(n, sizeof *sh.latest);
    sh.tick = calloc(n, sizeof *sh.tick);
    sh.t = calloc(n, sizeof *sh.t);
    pure_loop_group *g = NULL;
    int code = CLI_OK, rc = 0;
    unsigned made = 0, started = 0;
    if (!srv || !ctxs || !sh.latest || !sh.tick || !sh.t) {
        fprintf(stderr, "pure serve: out of memory\n");
        code = CLI_FAIL;
        goto out;
    }
    for (; made < n; made++) {
        if ((code = server_init(&srv[made], o, made, n)) != 0) {
            made++;
            goto out;
        }
        srv[made].shared = &sh;
        ctxs[made] = srv[made].ctx;
    }
    rc = pure_loop_group_new(ctxs, n, o->listen, &g);
    if (rc) {
        fprintf(stderr, "pure serve: cannot listen on %s with %u threads: %s\n", o->listen, n,
                rc == PURE_EIO ? strerror(errno) : pure_strerror(rc));
        code = rc == PURE_EIO ? CLI_USAGE : CLI_FAIL;
        goto out;
    }
    for (unsigned i = 0; i < n; i++)
        srv[i].loop = pure_loop_group_loop(g, i);
    /* Signals go to this thread only: it waits for them and stops every loop. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2); /* the drain */
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout shows up as a write error instead */
    print_listening(&srv[0], n);
    sh.t_start = pure_now();
    for (; started < n; started++)
        if (pthread_create(&srv[started].tid, NULL, server_thread, &srv[started]) != 0) {
            fprintf(stderr, "pure serve: cannot start thread %u: %s\n", started, strerror(errno));
            code = CLI_FAIL;
            break;
        }
    while (code == CLI_OK) {
        int sig = sigwaitinfo(&set, NULL);
        pthread_mutex_lock(&sh.mu);
        int failed = sh.failed;
        pthread_mutex_unlock(&sh.mu);
        if (failed) {
            code = CLI_FAIL;
            break;
        }
        if (sig == SIGINT || sig == SIGTERM)
            break;
        if (sig == SIGUSR2) { /* each thread drains its own context */
            pthread_mutex_lock(&sh.mu);
            sh.drain = 1;
            pthread_mutex_unlock(&sh.mu);
            for (unsigned i = 0; i < started; i++)
                pure_loop_stop(srv[i].loop);
        }
    }
    pthread_mutex_lock(&sh.mu);
    sh.stopping = 1;
    pthread_mutex_unlock(&sh.mu);
    for (unsigned i = 0; i < started; i++)
        pure_loop_stop(srv[i].loop);
    for (unsigned i = 0; i < started; i++)
        pthread_join(srv[i].tid, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (o->verbose)
        for (unsigned i = 0; i < n; i++)
            print_summary(&srv[i]);
out:
    pure_loop_group_free(g);
    for (unsigned i = 0; i < made; i++) {
        srv[i].loop = NULL;
        pure_ctx_free(srv[i].ctx); /* runs on_closed for links that did not finish closing */
    }
    pthread_mutex_destroy(&sh.mu);
    free(srv);
    free(ctxs);
    free(sh.latest);
    free(sh.tick);
    free(sh.t);
    return code;
}

int cli_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                         {"key", required_argument, NULL, 'k'},
                                         {"ephemeral", no_argument, NULL, 'e'},
                                         {"allow", required_argument, NULL, 'a'},
                                         {"allow-any", no_argument, NULL, 'A'},
                                         {"services", required_argument, NULL, 's'},
                                         {"keepalive", required_argument, NULL, 'K'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"stats-every", required_argument, NULL, 'E'},
                                         {"silent", no_argument, NULL, 'S'},
                                         {"threads", required_argument, NULL, 'T'},
                                         {"server-id", required_argument, NULL, 'I'},
                                         {"server-id-bits", required_argument, NULL, 'B'},
                                         {"moved-on-stop", no_argument, NULL, 'M'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *listen = NULL, *keyfile = NULL, *allow = NULL, *svc = "drain,echo,sink";
    int ephemeral = 0, allow_any = 0, verbose = 0, silent = 0, c;
    uint64_t keepalive = 0, stats_every = 0, threads = 0, server_id = 0, id_bits = 8;
    int has_server_id = 0, moved_on_stop = 0;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hv", opts, NULL)) != -1) {
        switch (c) {
        case 'l': listen = optarg; break;
        case 'k': keyfile = optarg; break;
        case 'e': ephemeral = 1; break;
        case 'a': allow = optarg; break;
        case 'A': allow_any = 1; break;
        case 'S': silent = 1; break;
        case 's': svc = optarg; break;
        case 'v': verbose = 1; break;
        case 'K':
            if (cli_parse_seconds(optarg, &keepalive))
                return cli_usage("serve", "--keepalive '%s' is not a number of seconds", optarg);
            break;
        case 'E':
            if (cli_parse_seconds(optarg, &stats_every) || stats_every < 1000000u)
                return cli_usage("serve",
                                 "--stats-every '%s' is not a number of seconds "
                                 "(0.001 or more)",
                                 optarg);
            break;
        case 'T':
            if (cli_parse_count(optarg, PURE_LOOP_GROUP_MAX, &threads) || threads == 0)
                return cli_usage("serve", "--threads '%s' is not a number of threads (1..%d)",
                                 optarg, PURE_LOOP_GROUP_MAX);
            break;
        case 'I':
            if (cli_parse_count(optarg, 255, &server_id))
                return cli_usage("serve", "--server-id '%s' is not a server id (0..255)", optarg);
            has_server_id = 1;
            break;
        case 'B':
            if (cli_parse_count(optarg, PURE_SERVER_ID_BITS_MAX, &id_bits) || id_bits == 0)
                return cli_usage("serve", "--server-id-bits '%s' is not a number of bits (1..%d)",
                                 optarg, PURE_SERVER_ID_BITS_MAX);
            break;
        case 'M': moved_on_stop = 1; break;
        case 'h': fputs(serve_help, stdout); return CLI_OK;
        default: return cli_bad_option("serve", c, argv);
        }
    }
    if (optind < argc)
        return cli_usage("serve", "unexpected argument '%s'", argv[optind]);
    if (!listen)
        return cli_usage("serve", "--listen ADDR:PORT is required (e.g. --listen 127.0.0.1:4433)");
    if (!!keyfile + ephemeral != 1)
        return cli_usage("serve", "give exactly one of --key FILE (a key from pure keygen) or "
                                  "--ephemeral (a new key for this run)");
    if (allow && allow_any)
        return cli_usage("serve", "--allow and --allow-any contradict each other");
    if (keyfile && !allow && !allow_any)
        return cli_usage("serve", "with --key, say who may connect: --allow FILE (client public "
                                  "keys) or --allow-any");
    if (has_server_id && server_id >> id_bits)
        return cli_usage("serve", "--server-id %llu does not fit in %llu bits (--server-id-bits)",
                         (unsigned long long)server_id, (unsigned long long)id_bits);
    unsigned mask;
    if (parse_services(svc, &mask))
        return CLI_USAGE;
    pure_addr bind_addr;
    if (pure_addr_from_string(&bind_addr, listen) != 0)
        return cli_usage("serve",
                         "--listen '%s' is not an address: expected ADDR:PORT such as "
                         "127.0.0.1:4433, [::1]:4433 or 0.0.0.0:0",
                         listen);

    if (!threads) { /* default: every online CPU */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus < 1 ? 1 : cpus > PURE_LOOP_GROUP_MAX ? PURE_LOOP_GROUP_MAX : (uint64_t)cpus;
    }
    serve_opts o = {.listen = listen,
                    .allow = allow,
                    .mask = mask,
                    .allow_any = allow_any || (ephemeral && !allow),
                    .keepalive = keepalive,
                    .respond_to_unknown = !silent,
                    .verbose = verbose,
                    .stats_every = stats_every,
                    .server_id = (unsigned)server_id,
                    .server_id_bits = has_server_id ? (unsigned)id_bits : 0,
                    .moved_on_stop = moved_on_stop};
    if (keyfile) {
        if (cli_read_key_file("serve", keyfile, o.key))
            return CLI_USAGE;
    } else if (pure_keygen(o.key) != 0) {
        fprintf(stderr, "pure serve: no randomness available for --ephemeral\n");
        return CLI_FAIL;
    }
    int code = threads == 1 ? serve_one(&o) : serve_threads(&o, (unsigned)threads);
    memset(o.key, 0, sizeof o.key);
    return code;
}

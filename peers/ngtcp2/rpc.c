/* SPDX-License-Identifier: MIT */
/*
 * ngtcp2 rpc-serve / rpc-client: the RPC workload over QUIC (bench/README.md, "RPC"; issue #14).
 * The requests, their check, the latency histogram and the report are bench/rpc_work.h's, as for
 * Pure's tools/rpc_bench.c and TCP + TLS's peers/tls/rpc.c, and both sides behave as those do.
 *
 *   ngtcp2 rpc-serve [--corrupt-every N] [--drop-every N]
 *       binds 127.0.0.1:0, prints {"port": N, ...}, serves any number of connections until
 *       SIGTERM or SIGINT, then prints {"served": N, "requests": N, "links": L, ...}. On each
 *       connection's one bidirectional stream every request (u32 BE length + body) is sent back
 *       unchanged, except a one-way request (rpc_server_echoes), which is only counted.
 *   ngtcp2 rpc-client PORT --links L --outstanding P --size S --duration SEC [--warmup SEC]
 *                     [--drain-timeout SEC] [--rate R] [--fanin N]
 *       L connections (at most 256 handshakes under way), one bidirectional stream each, P
 *       requests in flight per link (or R per second in all with --rate), every reply checked;
 *       with --fanin N each link sends N one-way requests and waits for the echo of its last.
 *
 * One thread and ONE UDP socket per side, the connections told apart by connection ID: the I/O
 * loop is multi.c's. Requests and replies are written into each connection's send buffer of
 * fixed chunks that ngtcp2 sends from and that are freed on acknowledgement: in steady state
 * neither side allocates per request. The server copies each echoed request straight into that
 * buffer as it arrives; a one-way request is not copied at all.
 */
#define _GNU_SOURCE
#include "multi.h"
#include "../../bench/rpc_work.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

int rpc_serve_main(int argc, char **argv);
int rpc_client_main(int argc, char **argv);

#define MAX_HANDSHAKES 256
#define FANIN_AHEAD (64u << 10) /* fan-in: request bytes a link keeps written, not yet acked */

typedef struct server {
    uint64_t corrupt_every, drop_every, requests, served, corrupted, dropped, oneway;
} server;

typedef struct client {
    side s;
    uint64_t l, p, size, rate, fanin, last_seq;
    uint64_t started, lost, echoes, t_last;
    uint64_t *sent_at;
    uint8_t *pat, *scratch;
    int measuring, stopping, closing, refused;
    /* --rate: the next link to try, due requests that found every link full, the start */
    uint64_t rate_cursor, rate_skipped, t_rate, inflight;
    char why[200];
    rpc_hist hist;
    rpc_result r;
} client;

static void cli_fail(client *k, const char *why)
{
    rpc_fail(&k->r, "ngtcp2 rpc-client", why);
}

/* ---- server ---- */

/* Server: request c->flen bytes long is in (its echo, if any, written after c->out.ready). */
static void srv_request(side *s, rconn *c)
{
    server *v = s->app;
    c->hdr_have = 0;
    v->requests++;
    if (!c->echo) {
        v->oneway++;
        return;
    }
    if (v->drop_every && v->requests % v->drop_every == 0) {
        v->dropped++;
        c->out.wpos = c->out.ready; /* take the echo back */
        return;
    }
    if (v->corrupt_every && v->requests % v->corrupt_every == 0 && c->flen) {
        *mq_sbuf_at(&c->out, c->out.wpos - 1) ^= 0x5a;
        v->corrupted++;
    }
    c->out.ready = c->out.wpos;
    v->served++;
    mq_mark_dirty(s, c);
}

/* Server: request bytes. Echoed requests are copied into c->out as they come; whether a request
 * is echoed is known from its first 8 bytes (rpc_server_echoes). */
static int srv_take(side *s, rconn *c, const uint8_t *d, size_t n)
{
    while (n) {
        if (c->hdr_have < 4) {
            size_t t = 4 - c->hdr_have < n ? 4 - c->hdr_have : n;
            memcpy(c->hdr + c->hdr_have, d, t);
            c->hdr_have += (uint32_t)t, d += t, n -= t;
            if (c->hdr_have < 4)
                break;
            c->flen = rpc_get_be32(c->hdr);
            c->fhave = 0;
            if (c->flen > RPC_MAX_SIZE) {
                c->why = "a request longer than RPC_MAX_SIZE";
                return NGTCP2_ERR_CALLBACK_FAILURE;
            }
            if (c->flen == 0) {
                c->echo = 1;
                if (mq_sbuf_append(s, &c->out, c->hdr, 4))
                    goto oom;
                srv_request(s, c);
            }
            continue;
        }
        size_t t = c->flen - c->fhave < n ? c->flen - c->fhave : n;
        if (c->fhave < 8) { /* the head: seq, which says one-way or not */
            size_t h = 8 - c->fhave < t ? 8 - c->fhave : t;
            memcpy(c->head + c->fhave, d, h);
            c->fhave += (uint32_t)h, d += h, n -= h, t -= h;
            if (c->fhave == (c->flen < 8 ? c->flen : 8)) {
                c->echo = (uint8_t)rpc_server_echoes(c->head, c->flen);
                if (c->echo && (mq_sbuf_append(s, &c->out, c->hdr, 4) ||
                                mq_sbuf_append(s, &c->out, c->head, c->fhave)))
                    goto oom;
            }
        }
        if (t && c->echo && mq_sbuf_append(s, &c->out, d, t))
            goto oom;
        c->fhave += (uint32_t)t, d += t, n -= t;
        if (c->fhave == c->flen)
            srv_request(s, c);
    }
    return 0;
oom:
    c->why = "out of memory for replies";
    return NGTCP2_ERR_CALLBACK_FAILURE;
}

static void srv_end(side *s, rconn *c, const char *why, int peer_closed)
{
    if (!peer_closed && s->failed <= 5)
        fprintf(stderr, "ngtcp2 rpc-serve: connection %u: %s\n", c->idx, why);
}

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static const char serve_usage[] = "usage: ngtcp2 rpc-serve [--corrupt-every N] [--drop-every N]\n";

int rpc_serve_main(int argc, char **argv)
{
    static side S;
    static server V;
    side *s = &S;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--corrupt-every") &&
            !rpc_parse_count(v, 1, UINT64_MAX, &V.corrupt_every))
            i++;
        else if (!strcmp(argv[i], "--drop-every") &&
                 !rpc_parse_count(v, 1, UINT64_MAX, &V.drop_every))
            i++;
        else {
            fputs(serve_usage, stderr);
            return 2;
        }
    }
    s->app = &V;
    s->on_data = srv_take;
    s->on_end = srv_end;
    if (nq_server_cred(&s->cred, "ngtcp2 rpc-serve") != 0)
        return 1;
    if (mq_side_init(s, 1) != 0) {
        fprintf(stderr, "ngtcp2 rpc-serve: cannot bind 127.0.0.1: %s\n", strerror(errno));
        return 1;
    }
    /* SIGTERM/SIGINT are blocked except inside ppoll, so none is missed between turns */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigprocmask(SIG_BLOCK, &block, &old);
    printf("{\"port\": %u, \"mode\": \"quic\", \"service\": \"rpc\", \"impl\": \"ngtcp2 %s\"}\n",
           ntohs(((struct sockaddr_in *)&s->local)->sin_port), ngtcp2_version(0)->version_str);
    fflush(stdout);
    while (!g_stop)
        mq_turn(s, nq_now() + NGTCP2_SECONDS, &old);
    printf("{\"served\": %" PRIu64 ", \"requests\": %" PRIu64 ", \"links\": %" PRIu64
           ", \"oneway\": %" PRIu64 ", \"corrupted\": %" PRIu64 ", \"dropped\": %" PRIu64
           ", \"failed\": %" PRIu64 ", \"packets_out\": %" PRIu64 ", \"sendmsgs\": %" PRIu64
           ", \"send_drops\": %" PRIu64 ", \"timers\": %" PRIu64 ", \"pace_retries\": %" PRIu64
           "}\n",
           V.served, V.requests, s->established, V.oneway, V.corrupted, V.dropped, s->failed,
           s->pkts_out, s->sendmsgs, s->send_drops, s->timers, s->retries);
    fflush(stdout);
    return 0;
}

/* ---- client ---- */

/* Writes c's next request into its stream buffer (conn_write hands it to ngtcp2). */
static void cli_queue(client *k, rconn *c)
{
    uint64_t seq = c->next_seq;
    if (k->fanin)
        seq = c->fanin_next | RPC_ONEWAY | (c->fanin_next + 1 == k->fanin ? RPC_LAST : 0);
    rpc_put_be32(k->scratch, (uint32_t)k->size);
    rpc_request(k->scratch + 4, k->pat, (uint32_t)k->size, c->idx, seq);
    if (mq_sbuf_append(&k->s, &c->out, k->scratch, 4 + k->size)) {
        cli_fail(k, "out of memory for requests");
        return;
    }
    c->out.ready = c->out.wpos;
    if (k->fanin) {
        c->fanin_next++;
    } else {
        k->sent_at[(uint64_t)c->idx * k->p + c->next_seq % k->p] = nq_now();
        c->next_seq++;
        k->inflight++;
    }
    k->r.sent++;
}

static void cli_send(client *k, rconn *c)
{
    cli_queue(k, c);
    mq_mark_dirty(&k->s, c);
}

/* Fan-in: more requests into c's stream as the bound allows (before every write of c). */
static void cli_top_up(side *s, rconn *c)
{
    client *k = s->app;
    if (k->fanin && k->measuring && c->sid >= 0)
        while (c->fanin_next < k->fanin && c->out.wpos - c->out.acked < FANIN_AHEAD)
            cli_queue(k, c);
}

static void cli_end(side *s, rconn *c, const char *why, int peer_closed)
{
    client *k = s->app;
    (void)c, (void)peer_closed;
    k->lost++;
    if (k->closing)
        return;
    char full[sizeof k->why];
    snprintf(full, sizeof full, "a connection was lost: %s", why);
    if (!k->r.first_error) /* first_error keeps the first loss's words */
        memcpy(k->why, full, sizeof full);
    cli_fail(k, k->r.first_error ? full : k->why);
}

static void cli_refused(side *s)
{
    client *k = s->app;
    k->refused = 1;
    if (!k->closing)
        cli_fail(k, "the server's port is closed (ICMP port unreachable)");
}

static void cli_reply(client *k, rconn *c, const uint8_t *d, size_t len)
{
    uint64_t now = nq_now();
    const char *bad;
    k->r.replies++;
    if (k->fanin) {
        bad = c->echoed ? "a second echo on a fan-in link"
                        : rpc_check(d, len, k->pat, (uint32_t)k->size, c->idx, k->last_seq);
        if (bad)
            cli_fail(k, bad);
        if (!c->echoed) {
            c->echoed = 1;
            k->echoes++;
            k->t_last = now;
        }
        return;
    }
    bad = rpc_check(d, len, k->pat, (uint32_t)k->size, c->idx, c->next_reply);
    if (bad)
        cli_fail(k, bad);
    if (k->measuring) {
        rpc_hist_add(&k->hist, now - k->sent_at[(uint64_t)c->idx * k->p + c->next_reply % k->p]);
        k->r.requests++;
    }
    c->next_reply++;
    k->inflight--;
    if (!k->stopping && !k->rate) /* paced: a reply only frees a slot */
        cli_send(k, c);
}

/* Client: reply bytes, split into frames; a frame that came in pieces is gathered in c->acc. */
static int cli_take(side *s, rconn *c, const uint8_t *d, size_t n)
{
    client *k = s->app;
    while (n) {
        if (c->hdr_have == 0 && n >= 4) {
            uint32_t len = rpc_get_be32(d);
            if (len > k->size)
                goto framing;
            if (n - 4 >= len) { /* a whole reply: checked where it lies */
                cli_reply(k, c, d + 4, len);
                d += 4 + (size_t)len, n -= 4 + (size_t)len;
                continue;
            }
        }
        if (c->hdr_have < 4) {
            size_t t = 4 - c->hdr_have < n ? 4 - c->hdr_have : n;
            memcpy(c->hdr + c->hdr_have, d, t);
            c->hdr_have += (uint32_t)t, d += t, n -= t;
            if (c->hdr_have < 4)
                break;
            c->flen = rpc_get_be32(c->hdr);
            c->fhave = 0;
            if (c->flen > k->size)
                goto framing;
            if (!c->acc && !(c->acc = malloc(k->size))) {
                c->why = "out of memory";
                return NGTCP2_ERR_CALLBACK_FAILURE;
            }
        }
        size_t t = c->flen - c->fhave < n ? c->flen - c->fhave : n;
        memcpy(c->acc + c->fhave, d, t);
        c->fhave += (uint32_t)t, d += t, n -= t;
        if (c->fhave == c->flen) {
            c->hdr_have = 0;
            cli_reply(k, c, c->acc, c->flen);
        }
    }
    return 0;
framing:
    c->why = "bad reply framing (a length above the request size)";
    return NGTCP2_ERR_CALLBACK_FAILURE;
}

/* --rate: sends the requests due by now on the next links in turn with fewer than P
 * outstanding; due requests that find every link full are skipped (and counted), as in
 * tools/rpc_bench.c and peers/tls/rpc.c. */
static void rate_issue(client *k)
{
    if (!k->rate || !k->t_rate || k->stopping)
        return;
    uint64_t due = (uint64_t)((double)(nq_now() - k->t_rate) * (double)k->rate / 1e9);
    for (uint64_t issued = k->r.sent + k->rate_skipped; issued < due; issued++) {
        if (k->inflight >= k->l * k->p) { /* every link full: no scan, the rest are skipped */
            k->rate_skipped += due - issued;
            break;
        }
        uint64_t tries = 0;
        for (; tries < k->l; tries++) {
            rconn *c = k->s.conns[k->rate_cursor];
            k->rate_cursor = (k->rate_cursor + 1) % k->l;
            if (c && c->sid >= 0 && c->next_seq - c->next_reply < k->p) {
                cli_send(k, c);
                break;
            }
        }
        if (tries == k->l)
            k->rate_skipped++;
    }
}

static void connect_more(client *k)
{
    while (k->started < k->l && k->started - k->s.established - k->lost < MAX_HANDSHAKES) {
        k->started++;
        if (mq_connect(&k->s) != 0) {
            k->lost++;
            cli_fail(k, "cannot make a connection (out of memory?)");
        }
    }
}

static int all_connected(client *k)
{
    connect_more(k);
    return k->s.established + k->lost >= k->l || k->refused;
}
static int all_answered(client *k)
{
    return k->r.replies >= k->r.sent || k->lost;
}
static int all_echoed(client *k)
{
    return k->echoes + k->lost >= k->l;
}

static void run_for(client *k, uint64_t ns, int (*done)(client *))
{
    uint64_t end = nq_now() + ns;
    for (uint64_t now; (now = nq_now()) < end && !(done && done(k));) {
        int pacing = k->rate && k->t_rate && !k->stopping;
        if (pacing)
            rate_issue(k);
        /* pacing wakes every 1/rate (20 us to 1 ms, as rpc_bench.c's pace_tick_ns) */
        uint64_t tick = 1000000000ull / (k->rate ? k->rate : 1);
        tick = tick < 20000 ? 20000 : tick > 1000000 ? 1000000 : tick;
        uint64_t until = pacing ? now + tick : done ? now + 1000000 : end;
        mq_turn(&k->s, until < end ? until : end, NULL);
    }
}

/* Every link started (traffic in 20 steps over the first half of the warm-up, as rpc_bench.c),
 * warm-up, the measured window, then the drain of what is outstanding. */
static void run_rpc(client *k, uint64_t warmup, uint64_t duration, uint64_t drain)
{
    if (k->rate) { /* full pace from the start, no ramp */
        k->t_rate = nq_now();
        run_for(k, warmup, NULL);
    } else {
        uint64_t steps = k->l < 20 ? k->l : 20;
        for (uint64_t st = 0; st < steps; st++) {
            for (uint64_t i = st * k->l / steps; i < (st + 1) * k->l / steps; i++) {
                rconn *c = k->s.conns[i];
                if (c && mq_open_stream(&k->s, c) != 0)
                    c = NULL;
                for (uint64_t j = 0; c && c->sid >= 0 && j < k->p; j++)
                    cli_send(k, c);
            }
            run_for(k, warmup / 2 / steps, NULL);
        }
        run_for(k, warmup - warmup / 2, NULL);
    }
    rpc_phase("measure_start");
    double cpu0 = rpc_cpu_s();
    uint64_t w0 = nq_now();
    k->measuring = 1;
    run_for(k, duration, NULL);
    k->measuring = 0;
    k->r.window_s = (double)(nq_now() - w0) / 1e9;
    k->r.client_cpu_s = rpc_cpu_s() - cpu0;
    rpc_phase("measure_end");
    k->stopping = 1;
    run_for(k, drain, all_answered);
    k->r.missing = k->r.sent - k->r.replies;
    if (k->r.missing)
        cli_fail(k, "replies missing at the end of the run");
}

/* The fan-in drain: every link sends its N one-way requests as room allows (conn_write). */
static void run_fanin(client *k, uint64_t drain)
{
    rpc_phase("measure_start");
    double cpu0 = rpc_cpu_s();
    uint64_t w0 = nq_now();
    k->measuring = 1;
    for (uint32_t i = 0; i < k->s.nconns; i++)
        if (k->s.conns[i])
            mq_mark_dirty(&k->s, k->s.conns[i]);
    run_for(k, drain, all_echoed);
    k->r.client_cpu_s = rpc_cpu_s() - cpu0;
    k->r.window_s = (double)((k->echoes == k->l ? k->t_last : nq_now()) - w0) / 1e9;
    k->measuring = 0;
    rpc_phase("measure_end");
    k->r.requests = k->r.sent;
    k->r.missing = k->l - k->echoes;
    if (k->r.missing)
        cli_fail(k, "links without the echo of their last request at the end of the run");
}

/* Closes every connection (CONNECTION_CLOSE, no error) and frees it. */
static void close_all(client *k)
{
    k->closing = 1;
    for (uint32_t i = 0; i < k->s.nconns; i++)
        if (k->s.conns[i])
            mq_close(&k->s, k->s.conns[i]);
    mq_flush(&k->s);
}

static const char client_usage[] =
    "usage: ngtcp2 rpc-client PORT --links L --outstanding P --size S --duration SEC\n"
    "                         [--warmup SEC] [--drain-timeout SEC] [--rate R]\n"
    "       ngtcp2 rpc-client PORT --links L --size S --fanin N [--drain-timeout SEC]\n";

int rpc_client_main(int argc, char **argv)
{
    static client K;
    client *k = &K;
    uint64_t port = 0, duration = 0, warmup = 500000000ull, drain = 10000000000ull;
    int have_port = 0, have_d = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--links") && !rpc_parse_count(v, 1, 1000000, &k->l))
            i++;
        else if (!strcmp(a, "--outstanding") && !rpc_parse_count(v, 1, RPC_MAX_OUTSTANDING, &k->p))
            i++;
        else if (!strcmp(a, "--size") && !rpc_parse_count(v, RPC_HDR, RPC_MAX_SIZE, &k->size))
            i++;
        else if (!strcmp(a, "--duration") && !rpc_parse_seconds(v, &duration))
            i++, have_d = 1;
        else if (!strcmp(a, "--warmup") && !rpc_parse_seconds(v, &warmup))
            i++;
        else if (!strcmp(a, "--drain-timeout") && !rpc_parse_seconds(v, &drain))
            i++;
        else if (!strcmp(a, "--rate") && !rpc_parse_count(v, 0, 1000000000, &k->rate))
            i++;
        else if (!strcmp(a, "--fanin") && !rpc_parse_count(v, 1, 1ull << 40, &k->fanin))
            i++;
        else if (a[0] != '-' && !have_port && !rpc_parse_count(a, 1, 65535, &port))
            have_port = 1;
        else
            goto usage;
    }
    if (!have_port || !k->l || !k->size || (k->fanin && k->rate) ||
        (!k->fanin && (!k->p || !have_d)))
        goto usage;
    if (k->fanin)
        k->p = 1; /* unused; keeps the arrays below non-empty */
    k->last_seq = (k->fanin - 1) | RPC_ONEWAY | RPC_LAST;
    k->r.links = k->l, k->r.outstanding = k->fanin ? 0 : k->p, k->r.size = k->size;
    k->r.rate = (double)k->rate;
    side *s = &k->s;
    s->app = k;
    s->on_data = cli_take;
    s->before_write = cli_top_up;
    s->on_end = cli_end;
    s->on_refused = cli_refused;
    k->sent_at = calloc(k->l * k->p, sizeof *k->sent_at);
    k->pat = rpc_pattern_new((uint32_t)k->size);
    k->scratch = malloc(4 + k->size);
    if (!k->sent_at || !k->pat || !k->scratch ||
        gnutls_certificate_allocate_credentials(&s->cred) < 0 || mq_side_init(s, 0) != 0) {
        fprintf(stderr, "ngtcp2 rpc-client: cannot set up: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memcpy(&s->remote, &sin, sizeof sin);
    s->remotelen = sizeof sin;
    if (connect(s->fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        fprintf(stderr, "ngtcp2 rpc-client: connect: %s\n", strerror(errno));
        return 1;
    }
    uint64_t t0 = nq_now();
    run_for(k, 120 * NGTCP2_SECONDS, all_connected);
    k->r.connect_s = (double)(nq_now() - t0) / 1e9;
    if (s->established < k->l) {
        fprintf(stderr,
                "ngtcp2 rpc-client: only %" PRIu64 " of %" PRIu64 " connections opened in %.1f s\n",
                s->established, k->l, k->r.connect_s);
        cli_fail(k, "not every connection opened");
    }
    printf("{\"phase\": \"connected\", \"links\": %" PRIu64 ", \"seconds\": %.3f}\n",
           s->established, k->r.connect_s);
    fflush(stdout);
    if (s->established == k->l && !k->lost) {
        if (k->fanin)
            run_fanin(k, drain);
        else
            run_rpc(k, warmup, duration, drain);
    }
    close_all(k);
    char extra[64];
    snprintf(extra, sizeof extra, ", \"rate_skipped\": %" PRIu64, k->rate_skipped);
    k->r.extra = extra;
    if (k->fanin)
        rpc_print_fanin(&k->r, k->fanin, "ngtcp2");
    else
        rpc_print_result(&k->r, &k->hist, "ngtcp2");
    if (s->send_drops)
        fprintf(stderr, "ngtcp2 rpc-client: %" PRIu64 " sends dropped (full socket)\n",
                s->send_drops);
    return k->r.errors == 0 && k->r.missing == 0 && s->established == k->l ? 0 : 1;
usage:
    fputs(client_usage, stderr);
    return 2;
}

/* SPDX-License-Identifier: MIT */
/* rpc_bench: the RPC workload over Pure (bench/README.md, "RPC"; issue #14).
 *
 *   rpc_bench serve [--listen ADDR:PORT] [--corrupt-every N] [--drop-every N] [--threads N]
 *       a listener (ephemeral key, any client key allowed, service "rpc") that sends every
 *       request back on its link from inside on_message. Prints {"port": N, "public_key":
 *       "..."}, serves until SIGTERM or SIGINT, then prints {"served": N, "links": L, ...}.
 *       --corrupt-every N flips a byte of every Nth reply and --drop-every N leaves every Nth
 *       request unanswered: for the test that a client notices (tests/scripts/rpc_smoke.sh).
 *       --threads N (default 1): N contexts on one port, a loop each on its own thread
 *       (pure_loop_group, pure_loop.h "Every core"); the exit line sums them.
 *   rpc_bench client ADDR:PORT --peer-key KEY --links L --outstanding P --size S
 *                    --duration SEC [--warmup SEC] [--drain-timeout SEC]
 *       opens L links (at most 256 handshakes at once), then keeps P requests of S bytes in
 *       flight on every link: each checked reply sends the next request. After the warm-up it
 *       measures for SEC seconds (phase lines {"phase": "measure_start"} and "measure_end" on
 *       stdout, where the runner samples the server's CPU), then stops sending, waits for every
 *       outstanding reply, closes the links and prints one JSON line (rpc_work.h,
 *       rpc_print_result). Exit 0 only if every reply arrived and matched its request.
 *       --rate R: R requests/s over all links instead of a closed loop (a reply only frees its
 *       slot; the due requests go out one pacing tick at a time, on the next link with fewer than P
 *       outstanding): the cost-growth experiment's fixed total rate.
 *   rpc_bench client ADDR:PORT --peer-key KEY --links L --size S --fanin N [--drain-timeout SEC]
 *       the fan-in drain: every link sends N one-way requests (RPC_ONEWAY; the server counts them
 *       and echoes only each link's last), as fast as each link takes them; the window runs from
 *       the first send to the last link's echo. Prints one rpc_print_fanin line.
 *
 * The server sets send_queue to 0 (pure.h: a service replying from on_message cannot wait for
 * on_writable) and handshake_load to 16384 (so that 10,000 links from one address connect
 * without cookies and the per-address INIT limit; `pure serve` has no flag for either, which is
 * why this is a tool of its own rather than `pure serve --services echo`).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/rpc_work.h"
#include "pure.h"
#include "pure_loop.h"

#define SERVICE "rpc"
#define MAX_HANDSHAKES 256 /* under way at once, as pure bench idle does */

static pure_loop *volatile g_loop;

static void on_signal(int sig)
{
    (void)sig;
    if (g_loop)
        pure_loop_stop(g_loop);
}

static void stop_on_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* ---- server ---- */

typedef struct server {
    uint64_t served, links, closed, failed_sends, corrupted, dropped, requests;
    uint64_t corrupt_every, drop_every;
    uint8_t *scratch; /* a reply to corrupt is copied here first */
} server;

static int srv_accept(pure_link *l, const char *svc, const uint8_t *k, void *user)
{
    server *s = user;
    s->links++;
    pure_link_set_user(l, s);
    return 0;
}

static void srv_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    server *s = user;
    s->requests++;
    if (!rpc_server_echoes(d, n)) /* the fan-in drain's one-way requests: counted only */
        return;
    if (s->drop_every && s->requests % s->drop_every == 0) {
        s->dropped++;
        return;
    }
    if (s->corrupt_every && s->requests % s->corrupt_every == 0 && n > 0 && n <= RPC_MAX_SIZE) {
        memcpy(s->scratch, d, n);
        s->scratch[n - 1] ^= 0x5a;
        d = s->scratch;
        s->corrupted++;
    }
    int64_t rc = pure_link_send(l, d, n);
    if (rc >= 0) {
        s->served++;
        return;
    }
    /* With send_queue 0 only an 8 MiB backlog of unacknowledged replies stops a send: a client
     * with that much in flight is not this workload. Say so and drop the link (the client then
     * counts the link as lost) rather than silently lose a reply. */
    if (s->failed_sends++ < 3)
        fprintf(stderr, "rpc_bench serve: a reply could not be sent (%s); closing that link\n",
                pure_strerror((int)rc));
    if (!pure_err_is_fatal((int)rc))
        pure_link_abort(l, PURE_CLOSE_APP, "reply backlog full");
}

static void srv_closed(pure_link *l, void *user, const pure_close_info *info)
{
    server *s = user;
    if (s)
        s->closed++;
}

static void *serve_thread(void *arg)
{
    pure_loop *loop = arg;
    return (void *)(intptr_t)pure_loop_run(loop, PURE_LOOP_FOREVER);
}

static int cmd_serve(int argc, char **argv)
{
    const char *listen = "127.0.0.1:0";
    uint64_t corrupt_every = 0, drop_every = 0, threads = 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
            listen = argv[++i];
        } else if (!strcmp(argv[i], "--corrupt-every") && i + 1 < argc) {
            if (rpc_parse_count(argv[++i], 1, UINT64_MAX, &corrupt_every))
                goto usage;
        } else if (!strcmp(argv[i], "--drop-every") && i + 1 < argc) {
            if (rpc_parse_count(argv[++i], 1, UINT64_MAX, &drop_every))
                goto usage;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            if (rpc_parse_count(argv[++i], 1, PURE_LOOP_GROUP_MAX, &threads))
                goto usage;
        } else {
            goto usage;
        }
    }
    static const pure_callbacks cbs = {
        .on_accept = srv_accept, .on_message = srv_message, .on_closed = srv_closed};
    unsigned n = (unsigned)threads;
    server *sv = calloc(n, sizeof *sv);
    pure_ctx **ctx = calloc(n, sizeof *ctx);
    pure_loop **loops = calloc(n, sizeof *loops);
    pthread_t *tid = calloc(n, sizeof *tid);
    uint8_t key[PURE_KEY_LEN];
    if (!sv || !ctx || !loops || !tid || pure_keygen(key)) {
        fprintf(stderr, "rpc_bench serve: out of memory or no randomness for a key\n");
        return 1;
    }
    pure_loop_group *g = NULL;
    int rc = 0;
    for (unsigned t = 0; t < n && !rc; t++) {
        sv[t].corrupt_every = corrupt_every;
        sv[t].drop_every = drop_every;
        pure_settings st;
        pure_settings_default(&st);
        pure_settings_use_huge_pages(&st); /* as the pure CLI does */
        memcpy(st.private_key, key, sizeof key);
        st.allow_any = 1;
        st.callbacks = &cbs;
        st.user = &sv[t];
        st.send_queue = 0;
        st.handshake_load = 16384;
        if (n > 1) { /* one context per thread, one server's budgets shared: pure_loop.h */
            pure_settings_set_thread(&st, t, n);
            pure_settings_share_budgets(&st, n);
        }
        sv[t].scratch = malloc(RPC_MAX_SIZE);
        if (!sv[t].scratch)
            rc = PURE_ENOMEM;
        else if (!(rc = pure_ctx_new(&st, &ctx[t])))
            rc = pure_ctx_add_service(ctx[t], SERVICE);
    }
    if (!rc && n == 1)
        rc = pure_loop_new(ctx[0], listen, &loops[0]);
    if (!rc && n > 1 && !(rc = pure_loop_group_new(ctx, n, listen, &g)))
        for (unsigned t = 0; t < n; t++)
            loops[t] = pure_loop_group_loop(g, t);
    if (rc) {
        fprintf(stderr, "rpc_bench serve: cannot listen on %s: %s (%s)\n", listen,
                pure_strerror(rc), strerror(errno));
        return 1;
    }
    char b64[45];
    pure_key_to_base64(b64, pure_ctx_public_key(ctx[0]));
    printf("{\"port\": %u, \"public_key\": \"%s\", \"service\": \"" SERVICE
           "\", \"threads\": %u}\n",
           pure_loop_port(loops[0]), b64, n);
    fflush(stdout);
    if (n == 1) {
        g_loop = loops[0];
        stop_on_signals();
        rc = pure_loop_run(loops[0], PURE_LOOP_FOREVER);
        g_loop = NULL;
    } else { /* the loops run on threads; this one waits for the signal and stops them */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        for (unsigned t = 0; t < n; t++)
            pthread_create(&tid[t], NULL, serve_thread, loops[t]);
        int sig;
        sigwait(&set, &sig);
        for (unsigned t = 0; t < n; t++)
            pure_loop_stop(loops[t]);
        for (unsigned t = 0; t < n; t++) {
            void *r;
            pthread_join(tid[t], &r);
            if (r)
                rc = (int)(intptr_t)r;
        }
    }
    if (rc)
        fprintf(stderr, "rpc_bench serve: the loop failed: %s (%s)\n", pure_strerror(rc),
                strerror(errno));
    server s = {0};
    pure_loop_stats io = {0};      /* summed over the loops: packets and wakeups per request */
    uint64_t waits = 0, wakes = 0; /* links held back by the flight limit, woken from its queue */
    uint64_t bursts = 0;           /* sendmsg calls (pure_ctx_write results) */
    for (unsigned t = 0; t < n; t++) {
        pure_loop_stats ls;
        pure_loop_stats_get(loops[t], &ls);
        pure_guard_stats gs;
        memset(&gs, 0, sizeof gs);
        pure_ctx_guard_stats_get(ctx[t], &gs, sizeof gs);
        waits += gs.in_flight_waits, wakes += gs.in_flight_wakes;
        pure_ctx_stats cs;
        pure_ctx_stats_get(ctx[t], &cs);
        bursts += cs.bursts_out;
        io.packets_sent += ls.packets_sent, io.datagrams_received += ls.datagrams_received;
        io.wakeups += ls.wakeups, io.timer_wakeups += ls.timer_wakeups, io.timeouts += ls.timeouts;
        if (n == 1)
            pure_loop_free(loops[t]);
        pure_ctx_free(ctx[t]);
        s.served += sv[t].served;
        s.requests += sv[t].requests;
        s.links += sv[t].links;
        s.corrupted += sv[t].corrupted;
        s.dropped += sv[t].dropped;
        s.failed_sends += sv[t].failed_sends;
        free(sv[t].scratch);
    }
    pure_loop_group_free(g);
    printf("{\"served\": %" PRIu64 ", \"requests\": %" PRIu64 ", \"links\": %" PRIu64
           ", \"corrupted\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"failed_sends\": %" PRIu64,
           s.served, s.requests, s.links, s.corrupted, s.dropped, s.failed_sends);
    printf(", \"packets_sent\": %" PRIu64 ", \"datagrams_received\": %" PRIu64
           ", \"wakeups\": %" PRIu64 ", \"timer_wakeups\": %" PRIu64 ", \"timeouts\": %" PRIu64,
           io.packets_sent, io.datagrams_received, io.wakeups, io.timer_wakeups, io.timeouts);
    printf(", \"in_flight_waits\": %" PRIu64 ", \"in_flight_wakes\": %" PRIu64
           ", \"bursts_out\": %" PRIu64,
           waits, wakes, bursts);
    if (n > 1) {
        printf(", \"per_thread_requests\": [");
        for (unsigned t = 0; t < n; t++)
            printf("%s%" PRIu64, t ? ", " : "", sv[t].requests);
        printf("]");
    }
    printf("}\n");
    fflush(stdout);
    free(sv);
    free(ctx);
    free(loops);
    free(tid);
    return rc ? 1 : 0;
usage:
    fprintf(
        stderr,
        "usage: rpc_bench serve [--listen ADDR:PORT] [--corrupt-every N] [--drop-every N] [--threads N]\n");
    return 2;
}

/* ---- client ---- */

struct client;

typedef struct clink {
    struct client *c;
    pure_link *link;
    uint32_t idx;
    uint32_t owed;       /* requests to send once the link is writable again */
    uint64_t next_seq;   /* the next request's sequence number */
    uint64_t next_reply; /* the sequence number the next reply must carry */
    int established, closed;
} clink;

typedef struct client {
    pure_ctx *ctx;
    pure_loop *loop;
    clink *links;
    uint64_t *sent_at; /* links x P send times: request seq of link i at [i * P + seq % P] */
    uint8_t *pat, *buf;
    uint32_t size, p;
    uint64_t l, started, established, closed, wanted_closed;
    int measuring, stopping, closing;
    uint64_t rate;         /* --rate: requests/s over all links, 0 for a closed loop */
    uint64_t rate_t0;      /* when paced traffic started */
    uint64_t rate_cursor;  /* the link the next paced request is offered to first */
    uint64_t rate_skipped; /* paced requests not sent because every link had P outstanding */
    uint64_t fanin;        /* --fanin N: one-way requests per link, 0 for the RPC workload */
    pure_addr to;
    uint8_t peer[PURE_KEY_LEN];
    rpc_hist hist;
    rpc_result r;
} client;

static void cli_fail(client *c, const char *why)
{
    rpc_fail(&c->r, "rpc_bench client", why);
}

static void cli_connect_more(client *c)
{
    while (c->started < c->l && c->started - c->established - c->closed < MAX_HANDSHAKES) {
        clink *cl = &c->links[c->started];
        cl->c = c;
        cl->idx = (uint32_t)c->started;
        c->started++;
        int rc = pure_connect(c->ctx, &c->to, c->peer, SERVICE, cl, &cl->link, pure_now());
        if (rc) {
            cl->closed = 1;
            c->closed++;
            cli_fail(c, "pure_connect failed");
        }
    }
}

/* The sequence number request n of a link carries: n itself, or with --fanin n | RPC_ONEWAY, and
 * RPC_LAST on the link's last. */
static uint64_t cli_seq(const client *c, uint64_t n)
{
    if (!c->fanin)
        return n;
    return n | RPC_ONEWAY | (n + 1 == c->fanin ? RPC_LAST : 0);
}

/* Sends request next_seq on cl; a full backlog keeps it owed until on_writable. */
static void cli_send(clink *cl)
{
    client *c = cl->c;
    if (cl->owed) {
        cl->owed++;
        return;
    }
    rpc_request(c->buf, c->pat, c->size, cl->idx, cli_seq(c, cl->next_seq));
    uint64_t now = pure_now();
    int64_t rc = pure_link_send(cl->link, c->buf, c->size);
    if (rc == PURE_EAGAIN) {
        cl->owed = 1;
        return;
    }
    if (rc < 0) {
        cli_fail(c, "pure_link_send failed");
        return;
    }
    if (!c->fanin)
        c->sent_at[(uint64_t)cl->idx * c->p + cl->next_seq % c->p] = now;
    cl->next_seq++;
    c->r.sent++;
}

/* --fanin: sends cl's one-way requests until they are all sent or the backlog is full (then
 * on_writable calls again). */
static void cli_pump(clink *cl)
{
    client *c = cl->c;
    cl->owed = 0;
    while (cl->next_seq < c->fanin && !cl->closed && !cl->owed) {
        uint64_t before = c->r.errors;
        cli_send(cl);
        if (c->r.errors != before)
            return;
    }
}

static void cli_writable(pure_link *l, void *user)
{
    clink *cl = user;
    if (cl->c->fanin) {
        cli_pump(cl);
        return;
    }
    uint32_t owed = cl->owed;
    cl->owed = 0;
    while (owed-- && !cl->closed) {
        cli_send(cl);
        if (cl->owed) { /* full again: keep the rest owed */
            cl->owed += owed;
            return;
        }
    }
}

static void cli_established(pure_link *l, void *user)
{
    clink *cl = user;
    client *c = cl->c;
    cl->established = 1;
    c->established++;
    cli_connect_more(c);
    if (c->established + c->closed == c->l && c->loop)
        pure_loop_stop(c->loop);
}

static void cli_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    clink *cl = user;
    client *c = cl->c;
    uint64_t now = pure_now();
    if (c->fanin) { /* only the last request's echo comes back */
        const char *bad = rpc_check(d, n, c->pat, c->size, cl->idx, cli_seq(c, c->fanin - 1));
        if (bad || cl->next_reply)
            cli_fail(c, bad ? bad : "a second echo on a fan-in link");
        cl->next_reply++;
        if (++c->r.replies == c->l)
            pure_loop_stop(c->loop);
        return;
    }
    const char *bad = rpc_check(d, n, c->pat, c->size, cl->idx, cl->next_reply);
    if (bad)
        cli_fail(c, bad);
    if (c->measuring) {
        rpc_hist_add(&c->hist, now - c->sent_at[(uint64_t)cl->idx * c->p + cl->next_reply % c->p]);
        c->r.requests++;
    }
    cl->next_reply++;
    c->r.replies++;
    if (!c->stopping && !c->rate) /* paced: a reply only frees a slot */
        cli_send(cl);
    else if (c->r.replies == c->r.sent)
        pure_loop_stop(c->loop);
}

static void cli_closed(pure_link *l, void *user, const pure_close_info *info)
{
    clink *cl = user;
    client *c = cl->c;
    cl->closed = 1;
    c->closed++;
    if (!c->closing) {
        cli_fail(c, "a link closed before the end of the run");
        if (c->r.errors <= 5)
            fprintf(stderr, "rpc_bench client: link %u: %s\n", cl->idx, pure_strerror(info->error));
        if (!cl->established)
            cli_connect_more(c);
    }
    if (c->closing && c->closed == c->l && c->loop) /* no loop inside pure_ctx_free */
        pure_loop_stop(c->loop);
}

/* --rate: sends the requests due by now (rate x time since rate_t0), each on the next link in
 * turn that has fewer than P outstanding. Due requests that find every link full are skipped
 * (counted), not saved up into a burst. */
static void cli_pace(client *c, uint64_t now)
{
    uint64_t due = (uint64_t)((double)(now - c->rate_t0) * (double)c->rate / 1e9);
    uint64_t issued = c->r.sent + c->rate_skipped;
    for (; issued < due; issued++) {
        uint64_t tries = 0;
        for (; tries < c->l; tries++) {
            clink *cl = &c->links[c->rate_cursor];
            c->rate_cursor = (c->rate_cursor + 1) % c->l;
            if (!cl->closed && cl->next_seq + cl->owed - cl->next_reply < c->p) {
                cli_send(cl);
                break;
            }
        }
        if (tries == c->l) { /* every link full: skip what is due now, not one scan each */
            c->rate_skipped += due - issued;
            break;
        }
    }
}

/* The pacing tick: one request's share of a second (50 us at 20,000/s), at least 20 us and at most
 * 1 ms. One request per tick is what a service's independent callers look like; sending a
 * millisecond's worth at once would batch them into one packet on a single link and make few
 * links look cheaper than many. */
static uint64_t pace_tick_ns(uint64_t rate)
{
    uint64_t t = 1000000000ull / rate;
    return t < 20000 ? 20000 : t > 1000000 ? 1000000 : t;
}

/* Runs the loop for ns nanoseconds, or until a callback stops it and `done` says so. Paced
 * (--rate, while sending) it wakes every pace_tick_ns to send what is due. */
static void run_for(client *c, uint64_t ns, int (*done)(client *))
{
    uint64_t end = pure_now() + ns;
    for (uint64_t now; (now = pure_now()) < end && !(done && done(c));) {
        int pacing = c->rate && c->rate_t0 && !c->stopping;
        if (pacing)
            cli_pace(c, now);
        uint64_t slice = end - now;
        uint64_t tick = pacing ? pace_tick_ns(c->rate) : slice;
        pure_loop_run(c->loop, slice < tick ? slice : tick);
    }
}

static int all_connected(client *c)
{
    return c->established + c->closed >= c->l;
}
static int all_answered(client *c)
{
    return c->r.replies >= c->r.sent;
}
static int all_closed(client *c)
{
    return c->closed >= c->l;
}
static int all_echoed(client *c)
{
    return c->r.replies >= c->l;
}

/* --fanin: every link sends its N one-way requests; the window ends at the last link's echo. */
static void cli_fanin(client *c, uint64_t drain)
{
    rpc_phase("measure_start");
    double cpu0 = rpc_cpu_s();
    uint64_t w0 = pure_now();
    for (uint64_t i = 0; i < c->l; i++)
        cli_pump(&c->links[i]);
    run_for(c, drain, all_echoed);
    c->r.window_s = (double)(pure_now() - w0) / 1e9;
    c->r.client_cpu_s = rpc_cpu_s() - cpu0;
    rpc_phase("measure_end");
    c->r.requests = c->r.sent;
    c->r.missing = c->l - c->r.replies;
}

static int cmd_client(int argc, char **argv)
{
    const char *addr = NULL, *key = NULL;
    uint64_t l = 0, p = 0, size = 0, duration = 0, warmup = 500000000ull, drain = 10000000000ull;
    uint64_t rate = 0, fanin = 0;
    int have_d = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--peer-key") && v)
            key = v, i++;
        else if (!strcmp(a, "--links") && v && !rpc_parse_count(v, 1, 1000000, &l))
            i++;
        else if (!strcmp(a, "--outstanding") && v &&
                 !rpc_parse_count(v, 1, RPC_MAX_OUTSTANDING, &p))
            i++;
        else if (!strcmp(a, "--size") && v && !rpc_parse_count(v, RPC_HDR, RPC_MAX_SIZE, &size))
            i++;
        else if (!strcmp(a, "--duration") && v && !rpc_parse_seconds(v, &duration))
            i++, have_d = 1;
        else if (!strcmp(a, "--warmup") && v && !rpc_parse_seconds(v, &warmup))
            i++;
        else if (!strcmp(a, "--drain-timeout") && v && !rpc_parse_seconds(v, &drain))
            i++;
        else if (!strcmp(a, "--rate") && v && !rpc_parse_count(v, 0, 1000000000, &rate))
            i++;
        else if (!strcmp(a, "--fanin") && v && !rpc_parse_count(v, 1, 1ull << 40, &fanin))
            i++;
        else if (a[0] != '-' && !addr)
            addr = a;
        else
            goto usage;
    }
    if (fanin && !p)
        p = 1; /* unused: the fan-in keeps no send times */
    if (!addr || !key || !l || !p || !size || (!have_d && !fanin) || (fanin && rate))
        goto usage;
    client c = {.l = l, .p = (uint32_t)p, .size = (uint32_t)size, .rate = rate, .fanin = fanin};
    c.r.links = l, c.r.outstanding = p, c.r.size = size, c.r.rate = (double)rate;
    if (pure_addr_from_string(&c.to, addr) || pure_key_from_base64(c.peer, key)) {
        fprintf(stderr, "rpc_bench client: bad address '%s' or key '%s'\n", addr, key);
        return 2;
    }
    c.links = calloc(l, sizeof *c.links);
    c.sent_at = calloc(l * p, sizeof *c.sent_at);
    c.pat = rpc_pattern_new(c.size);
    c.buf = malloc(size);
    static const pure_callbacks cbs = {.on_established = cli_established,
                                       .on_message = cli_message,
                                       .on_writable = cli_writable,
                                       .on_closed = cli_closed};
    pure_settings st;
    pure_settings_default(&st);
    pure_settings_use_huge_pages(&st);
    st.callbacks = &cbs;
    int rc = 0;
    if (!c.links || !c.sent_at || !c.pat || !c.buf || pure_keygen(st.private_key) ||
        (rc = pure_ctx_new(&st, &c.ctx)) || (rc = pure_loop_new(c.ctx, "0.0.0.0:0", &c.loop))) {
        fprintf(stderr, "rpc_bench client: cannot set up (out of memory, or no socket: %s)\n",
                strerror(errno));
        return 1;
    }
    g_loop = c.loop;

    uint64_t t0 = pure_now();
    cli_connect_more(&c);
    run_for(&c, 120000000000ull, all_connected);
    c.r.connect_s = (double)(pure_now() - t0) / 1e9;
    if (c.established < l) {
        fprintf(stderr,
                "rpc_bench client: only %" PRIu64 " of %" PRIu64 " links opened in %.1f s\n",
                c.established, l, c.r.connect_s);
        cli_fail(&c, "not every link opened");
    }
    printf("{\"phase\": \"connected\", \"links\": %" PRIu64 ", \"seconds\": %.3f}\n", c.established,
           c.r.connect_s);
    fflush(stdout);
    if (c.established == l && fanin) {
        cli_fanin(&c, drain);
    } else if (c.established == l) {
        /* Traffic starts on the links in 20 steps over the first half of the warm-up: all L x P
         * requests at once would be one synchronised burst that no socket buffer holds. */
        uint64_t steps = rate ? 0 : l < 20 ? l : 20; /* paced: no ramp, the rate is the ramp */
        c.rate_t0 = rate ? pure_now() : 0;
        for (uint64_t s = 0; s < steps; s++) {
            for (uint64_t i = s * l / steps; i < (s + 1) * l / steps; i++)
                for (uint64_t k = 0; k < p && !c.links[i].closed; k++)
                    cli_send(&c.links[i]);
            run_for(&c, warmup / 2 / steps, NULL);
        }
        run_for(&c, rate ? warmup : warmup - warmup / 2, NULL);
        rpc_phase("measure_start");
        double cpu0 = rpc_cpu_s();
        uint64_t w0 = pure_now();
        c.measuring = 1;
        run_for(&c, duration, NULL);
        c.measuring = 0;
        c.r.window_s = (double)(pure_now() - w0) / 1e9;
        c.r.client_cpu_s = rpc_cpu_s() - cpu0;
        rpc_phase("measure_end");
        c.stopping = 1;
        run_for(&c, drain, all_answered);
    }
    uint64_t owed = 0;
    for (uint64_t i = 0; i < l && !fanin; i++)
        owed += c.links[i].owed;
    if (!fanin)
        c.r.missing = c.r.sent - c.r.replies + owed;
    if (c.r.missing)
        cli_fail(&c, "replies missing at the end of the run");
    /* Loss recovery's share: what the links lost and resent (a busy run should have none), and
     * what the links' estimators ended at (means over the links still open): whether the RTT
     * and pacing, not the CPU, held a run back. */
    uint64_t lost = 0, ptos = 0, resent = 0, psent = 0, precv = 0, paced = 0, rnd = 0;
    uint64_t cwnd = 0, srtt = 0, rtt_min = 0, open = 0;
    for (uint64_t i = 0; i < c.started; i++)
        if (!c.links[i].closed) {
            pure_link_stats ls;
            pure_link_stats_get(c.links[i].link, &ls);
            lost += ls.packets_lost, ptos += ls.ptos, resent += ls.bytes_retransmitted;
            psent += ls.packets_sent, precv += ls.packets_received;
            paced += ls.paced_bursts, rnd += ls.random_losses;
            cwnd += ls.cwnd, srtt += ls.rtt_ns, rtt_min += ls.rtt_min_ns, open++;
        }
    if (open == 0)
        open = 1;
    pure_ctx_stats cs; /* the client's bursts: how many datagrams each sendmsg carried */
    pure_ctx_stats_get(c.ctx, &cs);
    pure_guard_stats gs; /* the context-wide flight limit: how often links waited for it */
    memset(&gs, 0, sizeof gs);
    pure_ctx_guard_stats_get(c.ctx, &gs, sizeof gs);
    char extra[900];
    snprintf(extra, sizeof extra,
             ", \"packets_lost\": %" PRIu64 ", \"ptos\": %" PRIu64 ", \"bytes_resent\": %" PRIu64
             ", \"rate_skipped\": %" PRIu64 ", \"packets_sent\": %" PRIu64
             ", \"packets_received\": %" PRIu64 ", \"paced_bursts\": %" PRIu64
             ", \"random_losses\": %" PRIu64 ", \"cwnd_mean\": %" PRIu64
             ", \"srtt_mean_us\": %" PRIu64 ", \"rtt_min_mean_us\": %" PRIu64
             ", \"datagrams_out\": %" PRIu64 ", \"bursts_out\": %" PRIu64
             ", \"in_flight_waits\": %" PRIu64 ", \"in_flight_wakes\": %" PRIu64
             ", \"in_flight_peak\": %" PRIu64,
             lost, ptos, resent, c.rate_skipped, psent, precv, paced, rnd, cwnd / open,
             srtt / open / 1000, rtt_min / open / 1000, cs.datagrams_out, cs.bursts_out,
             gs.in_flight_waits, gs.in_flight_wakes, gs.in_flight_peak);
    c.r.extra = extra;
    /* Close every link so the server sees clean ends, then report. */
    c.closing = 1;
    for (uint64_t i = 0; i < c.started; i++)
        if (!c.links[i].closed)
            pure_link_close(c.links[i].link, 0, "done");
    run_for(&c, 2000000000ull, all_closed);
    if (fanin)
        rpc_print_fanin(&c.r, fanin, "pure");
    else
        rpc_print_result(&c.r, &c.hist, "pure");
    g_loop = NULL;
    pure_loop_free(c.loop);
    c.loop = NULL;
    pure_ctx_free(c.ctx);
    int ok = c.r.errors == 0 && c.r.missing == 0 && c.established == l;
    free(c.links);
    free(c.sent_at);
    free(c.pat);
    free(c.buf);
    return ok ? 0 : 1;
usage:
    fprintf(
        stderr,
        "usage: rpc_bench client ADDR:PORT --peer-key KEY --links L --outstanding P --size S\n"
        "                        --duration SEC [--warmup SEC] [--drain-timeout SEC] [--rate R]\n"
        "       rpc_bench client ADDR:PORT --peer-key KEY --links L --size S --fanin N\n"
        "                        [--drain-timeout SEC]\n"
        "  (L 1..1000000, P 1..%u, S %d..%u bytes; --rate: requests/s over all links)\n",
        RPC_MAX_OUTSTANDING, RPC_HDR, RPC_MAX_SIZE);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "serve"))
        return cmd_serve(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "client"))
        return cmd_client(argc - 2, argv + 2);
    fprintf(
        stderr,
        "usage: rpc_bench serve [--listen ADDR:PORT] [--corrupt-every N] [--drop-every N] [--threads N]\n"
        "       rpc_bench client ADDR:PORT --peer-key KEY --links L --outstanding P --size S\n"
        "                        --duration SEC [--warmup SEC] [--drain-timeout SEC] [--rate R]\n"
        "       rpc_bench client ADDR:PORT --peer-key KEY --links L --size S --fanin N\n"
        "                        [--drain-timeout SEC]\n");
    return 2;
}

/* SPDX-License-Identifier: MIT */
/* hol_bench: head-of-line blocking on one link (bench/run.py hol; issue #23). One link carries a
 * bulk stream (1 MiB messages back to back) and small requests at a fixed rate, each echoed by
 * the server; the client measures the requests' round trips and the bulk's goodput. Modes:
 *   alone     requests only (channel 2)
 *   same      bulk and requests on channel 0 (one ordered stream: what Pure had before channels)
 *   separate  bulk on channel 1, requests on channel 2
 *   datagram  requests only, as datagrams (pure_link_send_datagram) the server echoes as datagrams:
 *             sent, echoed and lost instead of a bulk figure, and the CPU each side spent per
 *             request, to set beside `alone` (the same requests as channel messages)
 *
 *   hol_bench serve [--listen ADDR]
 *       Prints {"port": N, "public_key": "..."}; echoes every message of at most 64 bytes on the
 *       channel it came on, counts the rest (bulk), until SIGTERM/SIGINT.
 *   hol_bench client ADDR --peer-key KEY --mode alone|same|separate|datagram [--duration S]
 * [--warmup S]
 *             [--rate N] [--size N] [--bulk N]
 *       Requests of --size bytes (default 61) at --rate per second (default 1000) for --warmup
 *       (default 1) then --duration (default 10) seconds; a request the link cannot take yet (its
 *       channel's queue is full of bulk) waits in the application and is timed from when it was
 *       due. Prints {"mode", "requests", "p50_us", "p99_us", "p999_us", "bulk_mbps", ...}:
 *       round trips of the requests sent in the measured window, goodput of the bulk messages the
 *       peer acknowledged in it. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pure.h"
#include "pure_loop.h"

#define SERVICE "hol"
#define SMALL_MAX 64
#define REQ_CH_SEPARATE 2
#define BULK_CH_SEPARATE 1

static pure_loop *g_loop;

static void on_signal(int sig)
{
    (void)sig;
    if (g_loop)
        pure_loop_stop(g_loop);
}

/* ---- server ---- */

static uint64_t srv_bulk_bytes, srv_echoed, srv_echo_failed, srv_dgrams;

static int srv_accept(pure_link *l, const char *svc, const uint8_t *key, void *user)
{
    (void)l, (void)svc, (void)key, (void)user;
    return 0;
}

static void srv_any(pure_link *l, uint32_t ch, const uint8_t *d, size_t n)
{
    if (n > SMALL_MAX) {
        srv_bulk_bytes += n;
        return;
    }
    /* the return direction carries only echoes: send_queue 0, so this never waits */
    if (pure_link_send_on(l, ch, d, n) >= 0)
        srv_echoed++;
    else
        srv_echo_failed++;
}

static void srv_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    (void)user;
    srv_any(l, 0, d, n);
}

static void srv_channel(pure_link *l, void *user, uint32_t ch, const uint8_t *d, size_t n)
{
    (void)user;
    srv_any(l, ch, d, n);
}

static void srv_datagram(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    (void)user;
    srv_dgrams++;
    if (pure_link_send_datagram(l, d, n) == 0)
        srv_echoed++;
    else
        srv_echo_failed++;
}

/* CPU time of this process so far (user + system), ns. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int serve(int argc, char **argv)
{
    const char *listen = "127.0.0.1:0";
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            listen = argv[++i];
        } else {
            fprintf(stderr, "usage: hol_bench serve [--listen ADDR]\n");
            return 2;
        }
    }
    static const pure_callbacks cbs = {.on_accept = srv_accept,
                                       .on_message = srv_message,
                                       .on_channel_message = srv_channel,
                                       .on_datagram = srv_datagram};
    pure_settings st;
    pure_settings_default(&st);
    st.allow_any = 1;
    st.callbacks = &cbs;
    st.send_queue = 0;
    pure_ctx *ctx = NULL;
    pure_loop *loop = NULL;
    int rc;
    if ((rc = pure_keygen(st.private_key)) || (rc = pure_ctx_new(&st, &ctx)) ||
        (rc = pure_ctx_add_service(ctx, SERVICE)) || (rc = pure_loop_new(ctx, listen, &loop))) {
        fprintf(stderr, "hol_bench serve: cannot listen on %s: %s (%s)\n", listen,
                pure_strerror(rc), strerror(errno));
        return 1;
    }
    char b64[45];
    pure_key_to_base64(b64, pure_ctx_public_key(ctx));
    printf("{\"port\": %u, \"public_key\": \"%s\", \"service\": \"" SERVICE "\"}\n",
           pure_loop_port(loop), b64);
    fflush(stdout);
    g_loop = loop;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    rc = pure_loop_run(loop, PURE_LOOP_FOREVER);
    g_loop = NULL;
    fprintf(stderr,
            "hol_bench serve: %" PRIu64 " bulk bytes, %" PRIu64 " echoes (%" PRIu64
            " failed), %" PRIu64 " datagrams\n",
            srv_bulk_bytes, srv_echoed, srv_echo_failed, srv_dgrams);
    /* for bench/run.py: the server's CPU per echo over its whole life (a 10 s run at 1,000 a
     * second: the handshake is a few hundred microseconds of it) */
    printf("{\"server_cpu_ns\": %" PRIu64 ", \"echoed\": %" PRIu64 ", \"datagrams\": %" PRIu64
           "}\n",
           cpu_ns(), srv_echoed, srv_dgrams);
    fflush(stdout);
    pure_loop_free(loop);
    pure_ctx_free(ctx);
    return rc ? 1 : 0;
}

/* ---- client ---- */

typedef struct client {
    pure_ctx *ctx;
    pure_loop *loop;
    pure_link *link;
    int established, closed, bulk_on, dgram;
    uint64_t dgram_refused; /* pure_link_send_datagram said no (its queue full) */
    uint32_t req_ch, bulk_ch;
    uint32_t size, bulk;
    uint64_t rate;
    uint8_t *bulk_buf;
    /* requests: due times of those not yet handed to the link, in order */
    uint64_t *due;
    size_t due_head, due_len, due_cap;
    uint64_t next_seq, t0;
    uint64_t measure_from, measure_to; /* requests due in [from, to) are counted */
    uint64_t *rtt;
    size_t n_rtt, cap_rtt;
    uint64_t sent_in_window, answered_in_window;
    /* ids of bulk messages on bulk_ch, in order (channel 0 mixes them with requests) */
    uint64_t *bulk_ids;
    size_t n_bulk, cap_bulk;
} client;

static void *grow(void *p, size_t *cap, size_t elem)
{
    size_t n = *cap ? 2 * *cap : 4096;
    void *q = realloc(p, n * elem);
    if (!q) {
        fprintf(stderr, "hol_bench: out of memory\n");
        exit(1);
    }
    *cap = n;
    return q;
}

static void cli_fill_bulk(client *c)
{
    while (c->bulk_on && c->link && !c->closed) {
        int64_t id = pure_link_send_on(c->link, c->bulk_ch, c->bulk_buf, c->bulk);
        if (id < 0)
            return;
        if (c->n_bulk == c->cap_bulk)
            c->bulk_ids = grow(c->bulk_ids, &c->cap_bulk, sizeof *c->bulk_ids);
        c->bulk_ids[c->n_bulk++] = (uint64_t)id;
    }
}

/* Hands the requests that are due to the link, oldest first, as far as it takes them. */
static void cli_send_due(client *c)
{
    while (c->due_len && c->link && !c->closed) {
        uint8_t m[SMALL_MAX];
        uint64_t due = c->due[c->due_head];
        memset(m, 0xab, sizeof m);
        memcpy(m, &due, 8);
        if (c->dgram) {
            if (pure_link_send_datagram(c->link, m, c->size) != 0)
                c->dgram_refused++; /* unreliable: a datagram not taken is not retried */
        } else if (pure_link_send_on(c->link, c->req_ch, m, c->size) < 0) {
            return; /* PURE_EAGAIN: its channel's queue is full; on_writable or the next tick */
        }
        if (due >= c->measure_from && due < c->measure_to)
            c->sent_in_window++;
        c->due_head = (c->due_head + 1) % c->due_cap;
        c->due_len--;
    }
}

static void cli_tick(client *c, uint64_t now)
{
    uint64_t interval = 1000000000ull / c->rate;
    while (c->t0 + c->next_seq * interval <= now) {
        if (c->due_len == c->due_cap) { /* grow the ring, keeping its order */
            size_t old = c->due_cap;
            uint64_t *q = malloc((old ? 2 * old : 4096) * sizeof *q);
            if (!q)
                exit(1);
            for (size_t i = 0; i < c->due_len; i++)
                q[i] = c->due[(c->due_head + i) % old];
            free(c->due);
            c->due = q;
            c->due_head = 0;
            c->due_cap = old ? 2 * old : 4096;
        }
        c->due[(c->due_head + c->due_len) % c->due_cap] = c->t0 + c->next_seq * interval;
        c->due_len++;
        c->next_seq++;
    }
    cli_send_due(c);
    cli_fill_bulk(c);
}

static void cli_established(pure_link *l, void *user)
{
    (void)l;
    ((client *)user)->established = 1;
}

static void cli_answer(client *c, const uint8_t *d, size_t n)
{
    if (n > SMALL_MAX || n < 8)
        return;
    uint64_t due;
    memcpy(&due, d, 8);
    if (due < c->measure_from || due >= c->measure_to)
        return;
    if (c->n_rtt == c->cap_rtt)
        c->rtt = grow(c->rtt, &c->cap_rtt, sizeof *c->rtt);
    c->rtt[c->n_rtt++] = pure_now() - due;
    c->answered_in_window++;
}

static void cli_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    (void)l;
    cli_answer(user, d, n);
}

static void cli_channel(pure_link *l, void *user, uint32_t ch, const uint8_t *d, size_t n)
{
    (void)l, (void)ch;
    cli_answer(user, d, n);
}

static void cli_datagram(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    (void)l;
    cli_answer(user, d, n);
}

static void cli_writable(pure_link *l, void *user)
{
    (void)l;
    client *c = user;
    cli_send_due(c);
    cli_fill_bulk(c);
}

static void cli_closed(pure_link *l, void *user, const pure_close_info *info)
{
    (void)l;
    client *c = user;
    c->closed = 1;
    c->link = NULL;
    if (info->error)
        fprintf(stderr, "hol_bench client: link closed: %s\n", pure_strerror(info->error));
}

/* Bulk messages the peer acknowledged: those whose id is below the channel's first unacked. */
static uint64_t bulk_acked(client *c)
{
    uint64_t first = 0, next = 0;
    if (!c->link || pure_link_channel_unacked(c->link, c->bulk_ch, &first, &next) != 0)
        return 0;
    size_t lo = 0, hi = c->n_bulk;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->bulk_ids[mid] < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *v, size_t n, double q)
{
    if (!n)
        return -1;
    size_t i = (size_t)(q * (double)n);
    if (i >= n)
        i = n - 1;
    return (double)v[i] / 1e3;
}

/* Runs the loop until `end`, waking when the next request is due (so it leaves on time). */
static void run_until(client *c, uint64_t end)
{
    uint64_t interval = 1000000000ull / c->rate;
    for (uint64_t now; (now = pure_now()) < end && !c->closed;) {
        cli_tick(c, now);
        uint64_t next = c->t0 + c->next_seq * interval;
        uint64_t until = next < end ? next : end;
        pure_loop_run(c->loop, until > now ? until - now : 0);
    }
}

static int client_main(int argc, char **argv)
{
    const char *addr = argc > 2 ? argv[2] : NULL, *key = NULL, *mode = NULL;
    double duration = 10, warmup = 1;
    long rate = 1000, size = 61, bulk = 1 << 20;
    if ((argc - 3) % 2 != 0) /* every option takes a value */
        goto usage;
    for (int i = 3; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        char *end = NULL;
        if (strcmp(a, "--peer-key") == 0)
            key = v;
        else if (strcmp(a, "--mode") == 0)
            mode = v;
        else if (strcmp(a, "--duration") == 0)
            duration = strtod(v, &end);
        else if (strcmp(a, "--warmup") == 0)
            warmup = strtod(v, &end);
        else if (strcmp(a, "--rate") == 0)
            rate = strtol(v, &end, 10);
        else if (strcmp(a, "--size") == 0)
            size = strtol(v, &end, 10);
        else if (strcmp(a, "--bulk") == 0)
            bulk = strtol(v, &end, 10);
        else
            goto usage;
        if (end && (end == v || *end)) /* a number with anything after it, or none */
            goto usage;
    }
    if (!addr || !key || !mode || duration <= 0 || warmup < 0 || rate < 1 || rate > 100000 ||
        size < 8 || size > SMALL_MAX || bulk <= SMALL_MAX || bulk > (16 << 20))
        goto usage;
    client c = {.size = (uint32_t)size, .bulk = (uint32_t)bulk, .rate = (uint64_t)rate};
    if (strcmp(mode, "alone") == 0) {
        c.req_ch = REQ_CH_SEPARATE;
    } else if (strcmp(mode, "same") == 0) {
        c.bulk_on = 1;
    } else if (strcmp(mode, "separate") == 0) {
        c.bulk_on = 1;
        c.req_ch = REQ_CH_SEPARATE;
        c.bulk_ch = BULK_CH_SEPARATE;
    } else if (strcmp(mode, "datagram") == 0) {
        c.dgram = 1;
    } else {
        goto usage;
    }
    pure_addr to;
    uint8_t peer[PURE_KEY_LEN];
    if (pure_addr_from_string(&to, addr) || pure_key_from_base64(peer, key)) {
        fprintf(stderr, "hol_bench client: bad address '%s' or key '%s'\n", addr, key);
        return 2;
    }
    c.bulk_buf = malloc((size_t)bulk);
    if (!c.bulk_buf)
        return 1;
    for (long i = 0; i < bulk; i++)
        c.bulk_buf[i] = (uint8_t)(i % 251);
    static const pure_callbacks cbs = {.on_established = cli_established,
                                       .on_message = cli_message,
                                       .on_writable = cli_writable,
                                       .on_closed = cli_closed,
                                       .on_channel_message = cli_channel,
                                       .on_datagram = cli_datagram};
    pure_settings st;
    pure_settings_default(&st);
    st.callbacks = &cbs;
    int rc;
    if ((rc = pure_keygen(st.private_key)) || (rc = pure_ctx_new(&st, &c.ctx)) ||
        (rc = pure_loop_new(c.ctx, "0.0.0.0:0", &c.loop)) ||
        (rc = pure_connect(c.ctx, &to, peer, SERVICE, &c, &c.link, pure_now()))) {
        fprintf(stderr, "hol_bench client: cannot start: %s (%s)\n", pure_strerror(rc),
                strerror(errno));
        return 1;
    }
    g_loop = c.loop;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    uint64_t deadline = pure_now() + 10000000000ull;
    while (!c.established && !c.closed && pure_now() < deadline)
        pure_loop_run(c.loop, 10000000);
    if (!c.established) {
        fprintf(stderr, "hol_bench client: the link did not open\n");
        return 1;
    }
    c.t0 = pure_now();
    c.measure_from = c.t0 + (uint64_t)(warmup * 1e9);
    c.measure_to = c.measure_from + (uint64_t)(duration * 1e9);
    run_until(&c, c.measure_from);
    uint64_t bulk0 = bulk_acked(&c), t_from = pure_now(), cpu0 = cpu_ns();
    run_until(&c, c.measure_to);
    uint64_t bulk1 = bulk_acked(&c), t_to = pure_now(), cpu1 = cpu_ns();
    /* the answers to the window's last requests: requests stop, bulk goes on, for up to 10 s */
    c.rate = 1;
    c.t0 = UINT64_MAX / 2;
    uint64_t wait_end = pure_now() + 10000000000ull;
    if (c.dgram) /* a lost datagram is never answered: wait a few round trips, not 10 s */
        wait_end = pure_now() + 500000000ull;
    while (!c.closed && c.answered_in_window < c.sent_in_window + c.due_len &&
           pure_now() < wait_end) {
        cli_send_due(&c);
        cli_fill_bulk(&c);
        pure_loop_run(c.loop, 1000000);
    }
    qsort(c.rtt, c.n_rtt, sizeof *c.rtt, cmp64);
    double secs = (double)(t_to - t_from) / 1e9;
    pure_link_stats ls = {0};
    pure_datagram_stats ds = {0};
    if (c.link) {
        pure_link_stats_get(c.link, &ls);
        pure_link_datagram_stats(c.link, &ds);
    }
    printf("{\"mode\": \"%s\", \"requests\": %" PRIu64 ", \"answered\": %zu, \"p50_us\": %.1f, "
           "\"p99_us\": %.1f, \"p999_us\": %.1f, \"max_us\": %.1f, \"bulk_mbps\": %.2f, "
           "\"seconds\": %.3f, \"packets_lost\": %" PRIu64 ", \"rtt_min_us\": %.1f, "
           "\"closed\": %d, \"ptos\": %" PRIu64 ", \"retransmitted\": %" PRIu64
           ", \"cwnd\": %" PRIu64 ", \"random_losses\": %" PRIu64 ", \"client_cpu_us\": %.3f"
           ", \"dgram_sent\": %" PRIu64 ", \"dgram_lost\": %" PRIu64 ", \"dgram_refused\": %" PRIu64
           "}\n",
           mode, c.sent_in_window, c.n_rtt, pct_us(c.rtt, c.n_rtt, 0.5),
           pct_us(c.rtt, c.n_rtt, 0.99), pct_us(c.rtt, c.n_rtt, 0.999),
           c.n_rtt ? (double)c.rtt[c.n_rtt - 1] / 1e3 : -1,
           (double)(bulk1 - bulk0) * (double)bulk * 8 / 1e6 / secs, secs, ls.packets_lost,
           (double)ls.rtt_min_ns / 1e3, c.closed, ls.ptos, ls.bytes_retransmitted, ls.cwnd,
           ls.random_losses,
           c.sent_in_window ? (double)(cpu1 - cpu0) / 1e3 / (double)c.sent_in_window : -1.0,
           ds.sent, ds.lost, c.dgram_refused);
    fflush(stdout);
    int failed = c.closed || c.n_rtt == 0; /* before our own abort closes the link */
    g_loop = NULL;
    if (c.link)
        pure_link_abort(c.link, 0, "done");
    pure_loop_free(c.loop);
    pure_ctx_free(c.ctx);
    return failed;
usage:
    fprintf(stderr,
            "usage: hol_bench client ADDR --peer-key KEY --mode alone|same|separate|datagram "
            "[--duration S] [--warmup S] [--rate N] [--size 8..64] [--bulk N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "serve") == 0)
        return serve(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "client") == 0)
        return client_main(argc, argv);
    fprintf(stderr, "usage: hol_bench serve [--listen ADDR] | hol_bench client ADDR --peer-key KEY "
                    "--mode alone|same|separate|datagram [...]\n");
    return 2;
}

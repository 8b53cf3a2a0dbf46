/* SPDX-License-Identifier: MIT */
/* zmq: the drain and the RPC workload over ZeroMQ 4.3 (Debian's libzmq5, libsodium) with CURVE
 * on every socket (bench/README.md, "ZeroMQ + CURVE"; issue #21).
 *
 *   zmq serve
 *       the drain server: a PULL socket and an ack PUSH socket, both CURVE servers bound on
 *       127.0.0.1 ephemeral ports with a key pair made at start (zmq_curve_keypair); prints
 *       {"port": N, "ack_port": M, "server_key": "<64 hex>"} and serves drains one after
 *       another until killed.
 *   zmq drain PORT N SIZE --server-key HEX --ack-port M
 *       connects a PUSH to PORT and a PULL to M (CURVE clients, the server's key pinned), sends
 *       the preamble message "pure", then N messages of SIZE bytes (byte i is i % 251), then
 *       the end marker (a two-part message: ZeroMQ frames messages itself, so a one-part
 *       message is always a body and a multi-part one can only be the end); the server answers
 *       the end marker on the ack pair with its count (u64 BE messages, u64 BE body bytes).
 *       Prints {"messages", "size", "bytes", "seconds", "server_messages"}; exit 0 only if the
 *       server counted N.
 *   zmq rpc-serve [--corrupt-every N] [--drop-every N]
 *       the RPC server: one ROUTER, a CURVE server; every request (bench/rpc_work.h) is sent
 *       back on the connection it came on. Prints {"port": N, "server_key": ...}; on SIGTERM
 *       {"served", "requests", "links", ...}, links being the CURVE handshakes that succeeded
 *       (counted by a socket monitor).
 *   zmq rpc-client PORT --server-key HEX --links L --outstanding P --size S --duration SEC
 *                  [--warmup SEC] [--drain-timeout SEC] [--rate R]
 *   zmq rpc-client PORT --server-key HEX --links L --size S --fanin N [--drain-timeout SEC]
 *       L DEALER sockets, each its own TCP connection and CURVE handshake, P requests in flight
 *       on each, every reply checked; phase lines and the final JSON line as tools/rpc_bench.c.
 *
 * High-water marks (ZeroMQ counts them in messages, per peer; the default is 1000): the drain's
 * PUSH and PULL take 10,000, ten times the default (bench/README.md says why); the RPC sockets
 * take 2 x RPC_MAX_OUTSTANDING, above anything a link can have in flight, so neither side's
 * queue ever fills, and the ROUTER has ZMQ_ROUTER_MANDATORY set so a reply it could not queue
 * is an error, never a silent drop. One I/O thread per context (the default); libzmq sets
 * TCP_NODELAY on its connections itself.
 */
#define _GNU_SOURCE
#include "rpc_work.h"

#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <zmq.h>

#define DRAIN_HWM 10000
#define RPC_HWM (2 * RPC_MAX_OUTSTANDING)
#define DRAIN_MAX_SIZE (64u << 20)

static volatile sig_atomic_t g_stop;
/* How long a server's wait may last before it looks at g_stop again (a signal handled on one of
 * libzmq's threads does not interrupt the main thread's wait). */
#define STOP_CHECK_MS 100

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void zfail(const char *prog, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, zmq_strerror(zmq_errno()));
}

static int setint(void *s, int opt, int v)
{
    return zmq_setsockopt(s, opt, &v, sizeof v);
}

static int set_maxmsg(void *s, int64_t v) /* ZMQ_MAXMSGSIZE alone takes an int64_t */
{
    return zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &v, sizeof v);
}

static void hex32(const uint8_t *k, char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", k[i]);
}

static int unhex32(const char *s, uint8_t k[32])
{
    if (!s || strlen(s) != 64)
        return -1;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        k[i] = (uint8_t)v;
    }
    return 0;
}

/* A key pair: the secret in binary, the public key in binary. */
typedef struct keys {
    uint8_t pub[32], sec[32];
} keys;

static int make_keys(keys *k)
{
    char zpub[41], zsec[41];
    if (zmq_curve_keypair(zpub, zsec) || !zmq_z85_decode(k->pub, zpub) ||
        !zmq_z85_decode(k->sec, zsec))
        return -1;
    return 0;
}

static int curve_server(void *s, const keys *k)
{
    return setint(s, ZMQ_CURVE_SERVER, 1) || zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, k->sec, 32);
}

static int curve_client(void *s, const keys *mine, const uint8_t server_pub[32])
{
    return zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_pub, 32) ||
           zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, mine->pub, 32) ||
           zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, mine->sec, 32);
}

/* Binds s on 127.0.0.1, an ephemeral port; returns the port or -1. */
static int bind_any(void *s)
{
    char ep[256];
    size_t len = sizeof ep;
    if (zmq_bind(s, "tcp://127.0.0.1:*") || zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len))
        return -1;
    const char *colon = strrchr(ep, ':');
    return colon ? atoi(colon + 1) : -1;
}

static int connect_port(void *s, uint64_t port)
{
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%" PRIu64, port);
    return zmq_connect(s, ep);
}

/* L links need L descriptors (and ZeroMQ a mailbox descriptor per socket): raise the soft limit
 * to the hard one. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return;
    /* Two descriptors per link on the client: 10,000 links need more than a hard limit of
     * 20,000, so ask for more where allowed (CAP_SYS_RESOURCE), else take the hard limit. */
    struct rlimit want = {.rlim_cur = 1u << 16, .rlim_max = 1u << 16};
    if (rl.rlim_max >= want.rlim_max || setrlimit(RLIMIT_NOFILE, &want)) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void catch_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: zmq calls return EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* Handshake monitors: the CURVE handshake runs in ZeroMQ's I/O thread and a failed one (a wrong
 * server key) is retried quietly forever; a monitor on the socket says how it went. */
#define HS_EVENTS                                                                                  \
    (ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |                        \
     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

/* Starts a monitor on s (before connecting it); returns the PAIR socket to read, or NULL. */
static void *mon_start(void *ctx, void *s, uint64_t tag)
{
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://hs-%p-%" PRIu64, s, tag);
    void *pair = zmq_socket(ctx, ZMQ_PAIR);
    if (!pair || setint(pair, ZMQ_RCVTIMEO, 30000) || setint(pair, ZMQ_LINGER, 0) ||
        zmq_socket_monitor(s, ep, HS_EVENTS) || zmq_connect(pair, ep)) {
        if (pair)
            zmq_close(pair);
        return NULL;
    }
    return pair;
}

/* Waits (up to 30 s) for s's handshake, then stops and closes the monitor. 0 if it succeeded,
 * else -1 (with the reason on stderr unless prog is NULL). */
static int mon_wait(void *s, void *pair, const char *prog)
{
    zmq_msg_t e;
    zmq_msg_init(&e);
    int rc = -1;
    if (zmq_msg_recv(&e, pair, 0) < 0) {
        if (prog)
            fprintf(stderr, "%s: no CURVE handshake within 30 s (is the server there?)\n", prog);
    } else {
        uint16_t event = 0;
        if (zmq_msg_size(&e) >= 2)
            memcpy(&event, zmq_msg_data(&e), 2);
        while (zmq_msg_more(&e) && zmq_msg_recv(&e, pair, 0) >= 0) {
        }
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
            rc = 0;
        else if (prog)
            fprintf(stderr, "%s: the CURVE handshake failed (event 0x%x: a wrong --server-key?)\n",
                    prog, event);
    }
    zmq_msg_close(&e);
    zmq_socket_monitor(s, NULL, 0);
    zmq_close(pair);
    return rc;
}

/* ---- drain ---- */

static int cmd_serve(void)
{
    const char *prog = "zmq serve";
    keys k;
    void *ctx = zmq_ctx_new();
    void *pull = ctx ? zmq_socket(ctx, ZMQ_PULL) : NULL;
    void *ack = ctx ? zmq_socket(ctx, ZMQ_PUSH) : NULL;
    if (!pull || !ack || make_keys(&k) || curve_server(pull, &k) || curve_server(ack, &k) ||
        setint(pull, ZMQ_RCVHWM, DRAIN_HWM) || set_maxmsg(pull, DRAIN_MAX_SIZE) ||
        setint(ack, ZMQ_LINGER, 1000)) {
        zfail(prog, "setting up the sockets");
        return 1;
    }
    int port = bind_any(pull), ack_port = bind_any(ack);
    if (port < 0 || ack_port < 0) {
        zfail(prog, "binding 127.0.0.1");
        return 1;
    }
    char hex[65];
    hex32(k.pub, hex);
    printf("{\"port\": %d, \"ack_port\": %d, \"server_key\": \"%s\", \"mode\": \"zmq-curve\", "
           "\"service\": \"drain\"}\n",
           port, ack_port, hex);
    fflush(stdout);
    catch_signals();
    zmq_msg_t m;
    zmq_msg_init(&m);
    uint64_t msgs = 0, bytes = 0;
    int started = 0; /* the preamble arrived */
    /* A receive that blocks forever could miss SIGTERM: the kernel may run the handler on one of
     * libzmq's I/O threads, and the main thread's call is then never interrupted (an ASan CI run
     * hung so). Every wait ends after STOP_CHECK_MS and g_stop is looked at again. */
    int tmo = STOP_CHECK_MS;
    zmq_setsockopt(pull, ZMQ_RCVTIMEO, &tmo, sizeof tmo);
    while (!g_stop) {
        if (zmq_msg_recv(&m, pull, 0) < 0) {
            if (zmq_errno() == EINTR || zmq_errno() == EAGAIN)
                continue;
            zfail(prog, "receive");
            return 1;
        }
        if (zmq_msg_more(&m)) { /* the end marker: skip its other parts, answer the count */
            while (zmq_msg_more(&m) && zmq_msg_recv(&m, pull, 0) >= 0) {
            }
            if (!started)
                fprintf(stderr, "%s: an end marker before any preamble\n", prog);
            uint8_t reply[16];
            rpc_put_be64(reply, msgs);
            rpc_put_be64(reply + 8, bytes);
            if (zmq_send(ack, reply, sizeof reply, 0) < 0)
                zfail(prog, "sending the count");
            msgs = bytes = 0;
            started = 0;
            continue;
        }
        if (!started) {
            if (zmq_msg_size(&m) != 4 || memcmp(zmq_msg_data(&m), "pure", 4))
                fprintf(stderr, "%s: the first message is not the preamble \"pure\"; ignored\n",
                        prog);
            else
                started = 1;
            continue;
        }
        msgs++;
        bytes += zmq_msg_size(&m);
    }
    zmq_msg_close(&m);
    zmq_close(pull);
    zmq_close(ack);
    zmq_ctx_term(ctx);
    return 0;
}

static int cmd_drain(int argc, char **argv)
{
    const char *prog = "zmq drain";
    uint64_t port, n, size, ack_port = 0;
    uint8_t server_pub[32];
    int have_key = 0;
    if (argc < 3 || rpc_parse_count(argv[0], 1, 65535, &port) ||
        rpc_parse_count(argv[1], 0, 1ull << 40, &n) ||
        rpc_parse_count(argv[2], 0, DRAIN_MAX_SIZE, &size))
        goto usage;
    for (int i = 3; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--server-key") && !unhex32(v, server_pub))
            have_key = 1, i++;
        else if (!strcmp(argv[i], "--ack-port") && !rpc_parse_count(v, 1, 65535, &ack_port))
            i++;
        else
            goto usage;
    }
    if (!have_key || !ack_port)
        goto usage;
    uint8_t *pat = malloc(size + 1);
    if (!pat)
        return 1;
    for (uint64_t i = 0; i < size; i++)
        pat[i] = (uint8_t)(i % 251);
    keys mine;
    double t0 = (double)rpc_now_ns() / 1e9;
    void *ctx = zmq_ctx_new();
    void *push = ctx ? zmq_socket(ctx, ZMQ_PUSH) : NULL;
    void *ack = ctx ? zmq_socket(ctx, ZMQ_PULL) : NULL;
    if (!push || !ack || make_keys(&mine) || curve_client(push, &mine, server_pub) ||
        curve_client(ack, &mine, server_pub) || setint(push, ZMQ_SNDHWM, DRAIN_HWM) ||
        setint(ack, ZMQ_RCVTIMEO, 600000) || setint(push, ZMQ_LINGER, 0) ||
        setint(ack, ZMQ_LINGER, 0)) {
        zfail(prog, "setting up the sockets");
        return 1;
    }
    void *mpush = mon_start(ctx, push, 0), *mack = mon_start(ctx, ack, 1);
    if (!mpush || !mack || connect_port(push, port) || connect_port(ack, ack_port)) {
        zfail(prog, "connecting");
        return 1;
    }
    if (mon_wait(push, mpush, prog) || mon_wait(ack, mack, prog))
        return 1;
    if (zmq_send(push, "pure", 4, 0) < 0)
        goto send_failed;
    for (uint64_t i = 0; i < n; i++) {
        /* The body points into a pattern that never changes, as every drain sender's does:
         * zmq_send_const hands it over without a copy (CURVE then seals it into its own
         * buffer). */
        while (zmq_send_const(push, pat, size, 0) < 0)
            if (zmq_errno() != EINTR)
                goto send_failed;
    }
    if (zmq_send(push, "end", 3, ZMQ_SNDMORE) < 0 || zmq_send(push, "", 0, 0) < 0)
        goto send_failed;
    uint8_t reply[16];
    int got = zmq_recv(ack, reply, sizeof reply, 0);
    double secs = (double)rpc_now_ns() / 1e9 - t0;
    if (got != (int)sizeof reply) {
        if (got < 0)
            zfail(prog, "waiting for the server's count");
        else
            fprintf(stderr, "%s: the server's count is %d bytes, not 16\n", prog, got);
        return 1;
    }
    uint64_t m = rpc_get_be64(reply), mb = rpc_get_be64(reply + 8);
    printf("{\"messages\": %" PRIu64 ", \"size\": %" PRIu64 ", \"bytes\": %" PRIu64
           ", \"seconds\": %.6f, \"server_messages\": %" PRIu64 ", \"server_bytes\": %" PRIu64
           "}\n",
           n, size, n * size, secs, m, mb);
    fflush(stdout);
    zmq_close(push);
    zmq_close(ack);
    zmq_ctx_term(ctx);
    free(pat);
    if (m != n || mb != n * size) {
        fprintf(stderr,
                "%s: the server counted %" PRIu64 " messages (%" PRIu64 " bytes), sent %" PRIu64
                "\n",
                prog, m, mb, n);
        return 1;
    }
    return 0;
send_failed:
    zfail(prog, "send");
    return 1;
usage:
    fprintf(stderr, "usage: zmq drain PORT N SIZE --server-key HEX --ack-port PORT\n");
    return 2;
}

/* ---- RPC server ---- */

static int cmd_rpc_serve(int argc, char **argv)
{
    const char *prog = "zmq rpc-serve";
    uint64_t corrupt = 0, drop = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--corrupt-every") && !rpc_parse_count(v, 1, UINT64_MAX, &corrupt))
            i++;
        else if (!strcmp(argv[i], "--drop-every") && !rpc_parse_count(v, 1, UINT64_MAX, &drop))
            i++;
        else {
            fprintf(stderr, "usage: zmq rpc-serve [--corrupt-every N] [--drop-every N]\n");
            return 2;
        }
    }
    raise_nofile();
    keys k;
    void *ctx = zmq_ctx_new();
    if (ctx)
        zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 65536);
    void *router = ctx ? zmq_socket(ctx, ZMQ_ROUTER) : NULL;
    void *mon = ctx ? zmq_socket(ctx, ZMQ_PAIR) : NULL;
    if (!router || !mon || make_keys(&k) || curve_server(router, &k) ||
        setint(router, ZMQ_SNDHWM, RPC_HWM) || setint(router, ZMQ_RCVHWM, RPC_HWM) ||
        setint(router, ZMQ_ROUTER_MANDATORY, 1) || set_maxmsg(router, RPC_MAX_SIZE) ||
        setint(router, ZMQ_BACKLOG, 4096) ||
        zmq_socket_monitor(router, "inproc://rpc-serve-monitor", ZMQ_EVENT_HANDSHAKE_SUCCEEDED) ||
        zmq_connect(mon, "inproc://rpc-serve-monitor")) {
        zfail(prog, "setting up the sockets");
        return 1;
    }
    int port = bind_any(router);
    if (port < 0) {
        zfail(prog, "binding 127.0.0.1");
        return 1;
    }
    char hex[65];
    hex32(k.pub, hex);
    printf("{\"port\": %d, \"server_key\": \"%s\", \"mode\": \"zmq-curve\", \"service\": "
           "\"rpc\"}\n",
           port, hex);
    fflush(stdout);
    catch_signals();
    uint64_t requests = 0, served = 0, links = 0, corrupted = 0, dropped = 0, failed = 0;
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    zmq_pollitem_t items[2] = {{router, 0, ZMQ_POLLIN, 0}, {mon, 0, ZMQ_POLLIN, 0}};
    while (!g_stop) {
        if (zmq_poll(items, 2, STOP_CHECK_MS) < 0) { /* not -1: see STOP_CHECK_MS */
            if (zmq_errno() == EINTR)
                continue;
            zfail(prog, "poll");
            break;
        }
        while (zmq_msg_recv(&body, mon, ZMQ_DONTWAIT) >= 0) { /* event, then endpoint */
            uint16_t event = 0;
            if (zmq_msg_size(&body) >= 2)
                memcpy(&event, zmq_msg_data(&body), 2);
            if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
                links++;
            while (zmq_msg_more(&body) && zmq_msg_recv(&body, mon, 0) >= 0) {
            }
        }
        /* Every request that is waiting, then poll again. */
        while (!g_stop && zmq_msg_recv(&id, router, ZMQ_DONTWAIT) >= 0) {
            if (!zmq_msg_more(&id) || zmq_msg_recv(&body, router, 0) < 0) {
                failed++;
                continue;
            }
            if (zmq_msg_more(&body)) { /* a request is one part: drop the rest */
                while (zmq_msg_more(&body) && zmq_msg_recv(&body, router, 0) >= 0) {
                }
                failed++;
                continue;
            }
            requests++;
            const uint8_t *d = zmq_msg_data(&body);
            size_t len = zmq_msg_size(&body);
            if (!rpc_server_echoes(d, len)) /* the fan-in's one-way requests: counted only */
                continue;
            if (drop && requests % drop == 0) {
                dropped++;
                continue;
            }
            if (corrupt && requests % corrupt == 0 && len) {
                ((uint8_t *)zmq_msg_data(&body))[len - 1] ^= 0x5a;
                corrupted++;
            }
            /* The received messages go back as they are (zmq_msg_send takes them, no copy). */
            if (zmq_msg_send(&id, router, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
                zmq_msg_send(&body, router, ZMQ_DONTWAIT) < 0) {
                failed++; /* the peer is gone (EHOSTUNREACH), or its queue is full (EAGAIN) */
                continue;
            }
            served++;
        }
    }
    printf("{\"served\": %" PRIu64 ", \"requests\": %" PRIu64 ", \"links\": %" PRIu64
           ", \"corrupted\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"failed\": %" PRIu64 "}\n",
           served, requests, links, corrupted, dropped, failed);
    fflush(stdout);
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    setint(router, ZMQ_LINGER, 0);
    zmq_close(mon);
    zmq_close(router);
    zmq_ctx_term(ctx);
    return 0;
}

/* ---- RPC client ---- */

typedef struct link {
    void *s;
    int blocked; /* a send found the HWM full: wait for ZMQ_POLLOUT */
    uint64_t next_seq, next_reply;
} link_t;

typedef struct client {
    const char *prog;
    void *ctx;
    int ep;
    link_t *links;
    uint64_t *sent_at;
    uint8_t *pat, *req;
    uint32_t size, p;
    uint64_t l;
    int measuring, stopping;
    uint64_t rate, rate_t0, rate_cursor, rate_skipped;
    uint64_t fanin;
    zmq_msg_t m;
    rpc_hist hist;
    rpc_result r;
} client;

static void cli_fail(client *k, const char *why)
{
    rpc_fail(&k->r, k->prog, why);
}

/* Sends request next_seq of link i; 0, or -1 when the link's queue is full (nothing sent). */
static int cli_send(client *k, uint32_t i)
{
    link_t *c = &k->links[i];
    uint64_t seq = c->next_seq;
    if (k->fanin)
        seq |= RPC_ONEWAY | (seq + 1 == k->fanin ? RPC_LAST : 0);
    rpc_request(k->req, k->pat, k->size, i, seq);
    if (zmq_send(c->s, k->req, k->size, ZMQ_DONTWAIT) < 0) {
        if (zmq_errno() == EAGAIN) {
            c->blocked = 1;
            return -1;
        }
        cli_fail(k, "send failed");
        return -1;
    }
    if (!k->fanin)
        k->sent_at[(uint64_t)i * k->p + c->next_seq % k->p] = rpc_now_ns();
    c->next_seq++;
    k->r.sent++;
    return 0;
}

static void cli_reply(client *k, uint32_t i, const uint8_t *d, size_t len)
{
    link_t *c = &k->links[i];
    uint64_t now = rpc_now_ns();
    if (k->fanin) {
        const char *bad =
            rpc_check(d, len, k->pat, k->size, i, (k->fanin - 1) | RPC_ONEWAY | RPC_LAST);
        if (bad || c->next_reply)
            cli_fail(k, bad ? bad : "a second echo on a fan-in link");
        c->next_reply++;
        k->r.replies++;
        return;
    }
    const char *bad = rpc_check(d, len, k->pat, k->size, i, c->next_reply);
    if (bad)
        cli_fail(k, bad);
    if (k->measuring) {
        rpc_hist_add(&k->hist, now - k->sent_at[(uint64_t)i * k->p + c->next_reply % k->p]);
        k->r.requests++;
    }
    c->next_reply++;
    k->r.replies++;
    if (!k->stopping && !k->rate) /* paced: a reply only frees a slot */
        cli_send(k, i);
}

/* --fanin: sends link i's one-way requests until they are all queued or its HWM is reached. */
static void cli_pump(client *k, uint32_t i)
{
    link_t *c = &k->links[i];
    c->blocked = 0;
    while (c->next_seq < k->fanin && !cli_send(k, i)) {
    }
}

/* Handles everything link i's socket has for us. ZMQ_FD says only that ZMQ_EVENTS may have
 * changed (and a send can consume that signal), so this reads ZMQ_EVENTS until it shows
 * nothing left to do. */
static void cli_service(client *k, uint32_t i)
{
    link_t *c = &k->links[i];
    for (;;) {
        int ev = 0;
        size_t el = sizeof ev;
        if (zmq_getsockopt(c->s, ZMQ_EVENTS, &ev, &el))
            return;
        int did = 0;
        if (ev & ZMQ_POLLIN) {
            while (zmq_msg_recv(&k->m, c->s, ZMQ_DONTWAIT) >= 0) {
                cli_reply(k, i, zmq_msg_data(&k->m), zmq_msg_size(&k->m));
                did = 1;
            }
        }
        if ((ev & ZMQ_POLLOUT) && c->blocked && k->fanin && k->measuring) {
            cli_pump(k, i);
            did = 1;
        }
        if (!did)
            return;
    }
}

static void cli_pace(client *k, uint64_t now)
{
    uint64_t due = (uint64_t)((double)(now - k->rate_t0) * (double)k->rate / 1e9);
    for (uint64_t issued = k->r.sent + k->rate_skipped; issued < due; issued++) {
        uint64_t tries = 0;
        for (; tries < k->l; tries++) {
            uint32_t i = (uint32_t)k->rate_cursor;
            link_t *c = &k->links[i];
            k->rate_cursor = (k->rate_cursor + 1) % k->l;
            if (c->next_seq - c->next_reply < k->p && !cli_send(k, i)) {
                cli_service(k, i);
                break;
            }
        }
        if (tries == k->l) {
            k->rate_skipped += due - issued;
            break;
        }
    }
}

static void cli_poll(client *k, uint64_t ns)
{
    struct epoll_event evs[256];
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    int n = epoll_pwait2(k->ep, evs, 256, &ts, NULL);
    if (n < 0 && errno == ENOSYS)
        n = epoll_wait(k->ep, evs, 256, (int)(ns / 1000000 + (ns % 1000000 != 0)));
    for (int i = 0; i < n; i++)
        cli_service(k, evs[i].data.u32);
}

static void run_for(client *k, uint64_t ns, int (*done)(client *))
{
    uint64_t end = rpc_now_ns() + ns;
    for (uint64_t now; (now = rpc_now_ns()) < end && !(done && done(k));) {
        uint64_t left = end - now;
        int pacing = k->rate && k->rate_t0 && !k->stopping;
        if (pacing)
            cli_pace(k, now);
        uint64_t tick = 1000000000ull / (k->rate ? k->rate : 1);
        tick = tick < 20000 ? 20000 : tick > 1000000 ? 1000000 : tick;
        if (pacing && left > tick)
            left = tick;
        cli_poll(k, left);
    }
}

static int all_answered(client *k)
{
    return k->r.replies >= k->r.sent;
}
static int all_echoed(client *k)
{
    return k->r.replies >= k->l;
}

/* Opens the L links and waits until every CURVE handshake succeeded: at most CONNECT_BATCH at
 * once (as the other RPC clients open at most 256 handshakes at once), each watched by a monitor
 * that is closed once its link is up. Returns the links that came up. */
#define CONNECT_BATCH 256
static uint64_t cli_connect(client *k, const keys *mine, const uint8_t server_pub[32],
                            uint64_t port)
{
    void *mons[CONNECT_BATCH];
    uint64_t up = 0;
    for (uint64_t b = 0; b < k->l; b += CONNECT_BATCH) {
        uint64_t opened = 0, n = k->l - b < CONNECT_BATCH ? k->l - b : CONNECT_BATCH;
        int broke = 0;
        for (; opened < n; opened++) {
            uint64_t i = b + opened;
            link_t *c = &k->links[i];
            c->s = zmq_socket(k->ctx, ZMQ_DEALER);
            mons[opened] = NULL;
            int fd = -1;
            size_t fl = sizeof fd;
            if (!c->s || curve_client(c->s, mine, server_pub) ||
                setint(c->s, ZMQ_SNDHWM, RPC_HWM) || setint(c->s, ZMQ_RCVHWM, RPC_HWM) ||
                setint(c->s, ZMQ_LINGER, 0) || set_maxmsg(c->s, RPC_MAX_SIZE) ||
                !(mons[opened] = mon_start(k->ctx, c->s, i)) || connect_port(c->s, port) ||
                zmq_getsockopt(c->s, ZMQ_FD, &fd, &fl)) {
                zfail(k->prog, "opening a link (out of file descriptors?)");
                cli_fail(k, "cannot open a link");
                if (mons[opened])
                    opened++;
                broke = 1;
                break;
            }
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
            epoll_ctl(k->ep, EPOLL_CTL_ADD, fd, &ev);
        }
        for (uint64_t j = 0; j < opened; j++) /* the first failure said, not all L */
            if (!mon_wait(k->links[b + j].s, mons[j], up == b + j ? k->prog : NULL))
                up++;
        if (broke || up < b + opened)
            break;
    }
    return up;
}

static int cmd_rpc_client(int argc, char **argv)
{
    const char *port_s = NULL;
    uint64_t port = 0, l = 0, p = 0, size = 0, duration = 0, warmup = 500000000ull,
             drain = 10000000000ull, rate = 0, fanin = 0;
    int have_d = 0, have_key = 0;
    uint8_t server_pub[32];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--server-key") && !unhex32(v, server_pub))
            have_key = 1, i++;
        else if (!strcmp(a, "--links") && !rpc_parse_count(v, 1, 1000000, &l))
            i++;
        else if (!strcmp(a, "--outstanding") && !rpc_parse_count(v, 1, RPC_MAX_OUTSTANDING, &p))
            i++;
        else if (!strcmp(a, "--size") && !rpc_parse_count(v, RPC_HDR, RPC_MAX_SIZE, &size))
            i++;
        else if (!strcmp(a, "--duration") && !rpc_parse_seconds(v, &duration))
            i++, have_d = 1;
        else if (!strcmp(a, "--warmup") && !rpc_parse_seconds(v, &warmup))
            i++;
        else if (!strcmp(a, "--drain-timeout") && !rpc_parse_seconds(v, &drain))
            i++;
        else if (!strcmp(a, "--rate") && !rpc_parse_count(v, 0, 1000000000, &rate))
            i++;
        else if (!strcmp(a, "--fanin") && !rpc_parse_count(v, 1, 1ull << 40, &fanin))
            i++;
        else if (a[0] != '-' && !port_s && !rpc_parse_count(a, 1, 65535, &port))
            port_s = a;
        else
            goto usage;
    }
    if (fanin && !p)
        p = 1;
    if (!port_s || !have_key || !l || !p || !size || (!have_d && !fanin) || (fanin && rate))
        goto usage;
    raise_nofile();
    /* Every link is a socket: its TCP connection and its mailbox (an eventfd) are two
     * descriptors, plus two per monitor while connecting: say so now rather than at link 9,800. */
    struct rlimit rl;
    uint64_t need = 2 * l + 4 * CONNECT_BATCH + 64;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && need > rl.rlim_cur) {
        fprintf(stderr,
                "zmq rpc-client: %" PRIu64 " links need about %" PRIu64
                " file descriptors (two per link: its TCP connection and ZeroMQ's mailbox), the "
                "limit here is %" PRIu64 "\n",
                l, need, (uint64_t)rl.rlim_cur);
        return 1;
    }
    static client k;
    k.prog = "zmq rpc-client";
    k.l = l, k.p = (uint32_t)p, k.size = (uint32_t)size, k.rate = rate, k.fanin = fanin;
    k.r.links = l, k.r.outstanding = p, k.r.size = size, k.r.rate = (double)rate;
    keys mine;
    k.ctx = zmq_ctx_new();
    if (k.ctx)
        zmq_ctx_set(k.ctx, ZMQ_MAX_SOCKETS, (int)(l + 2 * CONNECT_BATCH + 64));
    k.ep = epoll_create1(EPOLL_CLOEXEC);
    k.links = calloc(l, sizeof *k.links);
    k.sent_at = calloc(l * p, sizeof *k.sent_at);
    k.pat = rpc_pattern_new(k.size);
    k.req = malloc(size);
    if (!k.ctx || k.ep < 0 || !k.links || !k.sent_at || !k.pat || !k.req || make_keys(&mine)) {
        fprintf(stderr, "%s: cannot set up\n", k.prog);
        return 1;
    }
    zmq_msg_init(&k.m);
    uint64_t t0 = rpc_now_ns();
    uint64_t up = cli_connect(&k, &mine, server_pub, port);
    k.r.connect_s = (double)(rpc_now_ns() - t0) / 1e9;
    if (up < l) {
        fprintf(stderr, "%s: only %" PRIu64 " of %" PRIu64 " links came up in %.1f s\n", k.prog, up,
                l, k.r.connect_s);
        cli_fail(&k, "not every link came up");
    }
    printf("{\"phase\": \"connected\", \"links\": %" PRIu64 ", \"seconds\": %.3f}\n", up,
           k.r.connect_s);
    fflush(stdout);
    if (up == l && fanin) {
        rpc_phase("measure_start");
        double cpu0 = rpc_cpu_s();
        uint64_t w0 = rpc_now_ns();
        k.measuring = 1;
        for (uint32_t i = 0; i < l; i++) {
            cli_pump(&k, i);
            cli_service(&k, i);
        }
        run_for(&k, drain, all_echoed);
        k.measuring = 0;
        k.r.window_s = (double)(rpc_now_ns() - w0) / 1e9;
        k.r.client_cpu_s = rpc_cpu_s() - cpu0;
        rpc_phase("measure_end");
        k.r.requests = k.r.sent;
    } else if (up == l) {
        uint64_t steps = rate ? 0 : l < 20 ? l : 20; /* traffic starts in steps, as rpc_bench.c */
        k.rate_t0 = rate ? rpc_now_ns() : 0;
        for (uint64_t s = 0; s < steps; s++) {
            for (uint64_t i = s * l / steps; i < (s + 1) * l / steps; i++) {
                for (uint64_t j = 0; j < p; j++)
                    if (cli_send(&k, (uint32_t)i))
                        break;
                cli_service(&k, (uint32_t)i);
            }
            run_for(&k, warmup / 2 / steps, NULL);
        }
        run_for(&k, rate ? warmup : warmup - warmup / 2, NULL);
        rpc_phase("measure_start");
        double cpu0 = rpc_cpu_s();
        uint64_t w0 = rpc_now_ns();
        k.measuring = 1;
        run_for(&k, duration, NULL);
        k.measuring = 0;
        k.r.window_s = (double)(rpc_now_ns() - w0) / 1e9;
        k.r.client_cpu_s = rpc_cpu_s() - cpu0;
        rpc_phase("measure_end");
        k.stopping = 1;
        run_for(&k, drain, all_answered);
    }
    k.r.missing = fanin ? k.l - k.r.replies : k.r.sent - k.r.replies;
    if (k.r.missing)
        cli_fail(&k, "replies missing at the end of the run");
    char extra[64];
    snprintf(extra, sizeof extra, ", \"rate_skipped\": %" PRIu64, k.rate_skipped);
    k.r.extra = extra;
    if (fanin)
        rpc_print_fanin(&k.r, fanin, "zmq");
    else
        rpc_print_result(&k.r, &k.hist, "zmq");
    zmq_msg_close(&k.m);
    for (uint64_t i = 0; i < l; i++)
        if (k.links[i].s)
            zmq_close(k.links[i].s);
    zmq_ctx_term(k.ctx);
    return k.r.errors == 0 && k.r.missing == 0 && up == l ? 0 : 1;
usage:
    fprintf(stderr,
            "usage: zmq rpc-client PORT --server-key HEX --links L --outstanding P --size S\n"
            "                      --duration SEC [--warmup SEC] [--drain-timeout SEC] [--rate R]\n"
            "       zmq rpc-client PORT --server-key HEX --links L --size S --fanin N\n"
            "                      [--drain-timeout SEC]\n");
    return 2;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 2 && !strcmp(argv[1], "serve"))
        return cmd_serve();
    if (argc >= 2 && !strcmp(argv[1], "drain"))
        return cmd_drain(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "rpc-serve"))
        return cmd_rpc_serve(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "rpc-client"))
        return cmd_rpc_client(argc - 2, argv + 2);
    fprintf(stderr, "usage: zmq serve\n"
                    "       zmq drain PORT N SIZE --server-key HEX --ack-port PORT\n"
                    "       zmq rpc-serve [--corrupt-every N] [--drop-every N]\n"
                    "       zmq rpc-client PORT --server-key HEX --links L --outstanding P ...\n");
    return 2;
}

/* SPDX-License-Identifier: MIT */
/* loop_test.c: the I/O loop over real loopback sockets: two contexts, each driven by its own
 * pure_loop (the server's on a thread), exchanging messages over IPv4 and IPv6, with and without
 * GSO/GRO; address parsing; timeouts; junk datagrams; handshakes that fail fast (a closed port,
 * the wrong address family, a UDP service that is not Pure). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pure.h"
#include "pure_loop.h"
#include "test.h"

/* ---- addresses ---- */

static void test_addr_parse(void)
{
    pure_addr a;
    char s[PURE_ADDR_STRLEN];
    static const char *good[] = {"127.0.0.1:0", "127.0.0.1:4433", "0.0.0.0:65535",     "[::1]:4433",
                                 "[::]:0",      "[fe80::1:2]:7",  "[::ffff:1.2.3.4]:9"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        CHECK_EQ(pure_addr_from_string(&a, good[i]), 0);
        CHECK_EQ(pure_addr_to_string(&a, s, sizeof s), 0);
        CHECK(strcmp(s, good[i]) == 0);
    }
    CHECK_EQ(pure_addr_from_string(&a, "[::1]:4433"), 0);
    CHECK_EQ(a.len, sizeof(struct sockaddr_in6));
    CHECK_EQ(pure_addr_from_string(&a, "127.0.0.1:4433"), 0);
    CHECK_EQ(a.len, sizeof(struct sockaddr_in));
    struct sockaddr_in s4;
    memcpy(&s4, a.bytes, sizeof s4);
    CHECK_EQ(s4.sin_family, AF_INET);
    CHECK_EQ(ntohs(s4.sin_port), 4433);
    CHECK_EQ(ntohl(s4.sin_addr.s_addr), 0x7f000001);

    static const char *bad[] = {"",
                                "127.0.0.1",
                                "127.0.0.1:",
                                "127.0.0.1:65536",
                                "127.0.0.1:-1",
                                "127.0.0.1:+1",
                                "127.0.0.1: 1",
                                "localhost:80",
                                "[127.0.0.1]:80",
                                "::1:80",
                                "[::1]80",
                                "[::1]:",
                                "[::1",
                                "1.2.3.4:80x",
                                " 1.2.3.4:80",
                                "1.2.3.4:0x50",
                                "1.2.3:80",
                                "256.1.1.1:80",
                                "[::1]:99999999999999999999",
                                ":80",
                                "[]:80",
                                "1.2.3.4:80:80",
                                "[::1]:80]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = pure_addr_from_string(&a, bad[i]);
        if (rc != PURE_EINVAL)
            fprintf(stderr, "accepted junk address %s\n", bad[i]);
        CHECK_EQ(rc, PURE_EINVAL);
    }
    CHECK_EQ(pure_addr_from_string(&a, NULL), PURE_EINVAL);
    CHECK_EQ(pure_addr_from_string(NULL, "1.2.3.4:5"), PURE_EINVAL);

    /* printing junk: a wrong length or family gives "" and PURE_EINVAL */
    memset(&a, 0, sizeof a);
    a.len = 6;
    CHECK_EQ(pure_addr_to_string(&a, s, sizeof s), PURE_EINVAL);
    CHECK(s[0] == 0);
    a.len = sizeof(struct sockaddr_in); /* family 0 */
    CHECK_EQ(pure_addr_to_string(&a, s, sizeof s), PURE_EINVAL);
    CHECK_EQ(pure_addr_from_string(&a, "[::1]:4433"), 0);
    CHECK_EQ(pure_addr_to_string(&a, s, 5), PURE_EINVAL); /* too small */
}

/* ---- an echo exchange between two loops ---- */

#define MSGS 400
#define MAX_MSG 12000

typedef struct side {
    pure_ctx *ctx;
    pure_loop *loop;
    pure_link *link;
    uint64_t received; /* messages (client: echoes) received */
    uint64_t bad;      /* echoes that differ from what was sent */
    int finished, closed, close_error;
} side;

static size_t gen(uint64_t i, uint8_t *out)
{
    size_t len = (size_t)((i * 7919u) % MAX_MSG);
    if (i % 50 == 0)
        len = 0;
    for (size_t j = 0; j < len; j++)
        out[j] = (uint8_t)(i * 31 + j * 7 + (j >> 9));
    return len;
}

static int srv_accept(pure_link *link, const char *service, const uint8_t *key, void *user)
{
    side *s = user;
    pure_link_set_user(link, s);
    s->link = link;
    return strcmp(service, "echo") == 0 ? 0 : PURE_EREFUSED;
}

static void srv_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    side *s = user;
    s->received++;
    if (pure_link_send(link, d, n) < 0)
        s->bad++; /* the backlog (8 MiB) holds the whole exchange */
}

static void srv_finished(pure_link *link, void *user)
{
    side *s = user;
    s->finished = 1;
    pure_link_finish(link);
}

static void srv_closed(pure_link *link, void *user, const pure_close_info *info)
{
    side *s = user;
    s->closed = 1;
    s->close_error = info->error;
    s->link = NULL;
}

static const pure_callbacks srv_cb = {.on_accept = srv_accept,
                                      .on_message = srv_message,
                                      .on_peer_finished = srv_finished,
                                      .on_closed = srv_closed};

static uint8_t want[MAX_MSG];

static void cli_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    side *c = user;
    size_t wl = gen(c->received, want);
    if (wl != n || memcmp(want, d, n) != 0)
        c->bad++;
    c->received++;
}

static void cli_finished(pure_link *link, void *user)
{
    side *c = user;
    c->finished = 1;
    pure_link_close(link, 0, "done");
}

static void cli_closed(pure_link *link, void *user, const pure_close_info *info)
{
    side *c = user;
    c->closed = 1;
    c->close_error = info->error;
    c->link = NULL;
    pure_loop_stop(c->loop);
}

static const pure_callbacks cli_cb = {
    .on_message = cli_message, .on_peer_finished = cli_finished, .on_closed = cli_closed};

static int make_side(side *s, const pure_callbacks *cb, const char *bind, int server)
{
    memset(s, 0, sizeof *s);
    pure_settings st;
    pure_settings_default(&st);
    CHECK_EQ(pure_keygen(st.private_key), 0);
    st.callbacks = cb;
    st.user = s;
    st.allow_any = server;
    st.send_queue = 0; /* the echo server replies from on_message: the backlog holds it all */
    if (pure_ctx_new(&st, &s->ctx) != 0)
        return -1;
    if (server)
        CHECK_EQ(pure_ctx_add_service(s->ctx, "echo"), 0);
    int rc = pure_loop_new(s->ctx, bind, &s->loop);
    CHECK_EQ(rc, 0);
    return rc;
}

static void free_side(side *s)
{
    pure_loop_free(s->loop);
    pure_ctx_free(s->ctx);
}

static void *serve_thread(void *arg)
{
    side *s = arg;
    CHECK_EQ(pure_loop_run(s->loop, PURE_LOOP_FOREVER), 0);
    return NULL;
}

/* Starts srv's loop in a thread th and connects cli to it at `host` (a format taking the
 * server's port) for the echo service. */
static void start_link(side *srv, side *cli, pthread_t *th, const char *host, char *to_s,
                       size_t to_cap)
{
    CHECK(pure_loop_port(srv->loop) != 0);
    CHECK_EQ(pthread_create(th, NULL, serve_thread, srv), 0);
    snprintf(to_s, to_cap, host, pure_loop_port(srv->loop));
    pure_addr to;
    CHECK_EQ(pure_addr_from_string(&to, to_s), 0);
    /* the server's key is read before its thread touches the context: it never changes */
    CHECK_EQ(pure_connect(cli->ctx, &to, pure_ctx_public_key(srv->ctx), "echo", cli, &cli->link,
                          pure_now()),
             0);
}

static void exchange(const char *srv_bind, const char *cli_bind, const char *host, int offload)
{
    side srv, cli;
    if (make_side(&srv, &srv_cb, srv_bind, 1) || make_side(&cli, &cli_cb, cli_bind, 0))
        return;
    pure_loop_set_gso(cli.loop, offload);
    pure_loop_set_gso(srv.loop, offload);
    pure_loop_set_gro(cli.loop, offload);
    pure_loop_set_gro(srv.loop, offload);
    pthread_t th;
    char to_s[PURE_ADDR_STRLEN];
    start_link(&srv, &cli, &th, host, to_s, sizeof to_s);
    static uint8_t buf[MAX_MSG];
    uint64_t sent_bytes = 0;
    for (uint64_t i = 0; i < MSGS; i++) {
        size_t n = gen(i, buf);
        CHECK_EQ(pure_link_send(cli.link, buf, n), (int64_t)i);
        sent_bytes += n;
    }
    CHECK_EQ(pure_link_finish(cli.link), 0);
    uint64_t t0 = pure_now();
    CHECK_EQ(pure_loop_run(cli.loop, 20ull * 1000000000u), 0);
    CHECK(pure_now() - t0 < 20ull * 1000000000u); /* stopped by on_closed, not the timeout */
    pure_loop_stop(srv.loop);
    pthread_join(th, NULL);

    CHECK_EQ(cli.received, MSGS);
    CHECK_EQ(cli.bad, 0);
    CHECK(cli.finished);
    CHECK(cli.closed);
    CHECK_EQ(cli.close_error, 0);
    CHECK_EQ(srv.received, MSGS);
    CHECK_EQ(srv.bad, 0);

    pure_loop_stats cs, ss;
    pure_loop_stats_get(cli.loop, &cs);
    pure_loop_stats_get(srv.loop, &ss);
    fprintf(stderr,
            "  %s offload=%d: client sendmsg %llu packets %llu gso %llu | server recvmsg %llu "
            "datagrams %llu gro %llu/%llu\n",
            to_s, offload, (unsigned long long)cs.sendmsg_calls,
            (unsigned long long)cs.packets_sent, (unsigned long long)cs.gso_bursts,
            (unsigned long long)ss.recvmsg_calls, (unsigned long long)ss.datagrams_received,
            (unsigned long long)ss.gro_segments, (unsigned long long)ss.gro_buffers);
    /* ~2.4 MB each way cannot fit in fewer than ~1600 datagrams of 1472 bytes */
    CHECK(cs.packets_sent > sent_bytes / 1472);
    CHECK(cs.packets_sent > cs.sendmsg_calls); /* several datagrams per system call */
    CHECK_EQ(cs.send_errors, 0);
    CHECK_EQ(ss.recv_errors, 0);
    CHECK(ss.datagrams_received >= ss.recvmsg_calls);
    if (offload) {
        CHECK(cs.gso);
        CHECK(cs.gso_bursts > 0);
        CHECK(ss.gso_bursts > 0);
        /* the core fills 64 KiB bursts: a bulk transfer averages well above 3 per sendmsg */
        CHECK(cs.packets_sent > 3 * cs.sendmsg_calls);
        CHECK(ss.datagrams_received > 3 * ss.recvmsg_calls);
        CHECK(ss.gro);
        CHECK(ss.gro_segments > 0); /* loopback hands GSO bursts to a GRO socket whole */
        CHECK(ss.gro_buffers > 0);
    } else {
        CHECK_EQ(cs.gso_bursts, 0);
        CHECK_EQ(ss.gro_segments, 0);
        CHECK(!ss.gro);
    }
    pure_ctx_stats cx;
    pure_ctx_stats_get(cli.ctx, &cx);
    CHECK_EQ(cx.datagrams_out, cs.packets_sent);
    free_side(&cli);
    free_side(&srv);
}

static void test_ipv4(void)
{
    exchange("127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:%u", 1);
}
static void test_ipv6(void)
{
    exchange("[::1]:0", "[::1]:0", "[::1]:%u", 1);
}
static void test_no_offload(void)
{
    exchange("127.0.0.1:0", "0.0.0.0:0", "127.0.0.1:%u", 0);
}
/* an IPv6 wildcard socket talking to an IPv4 server: mapped on send, unmapped on receive */
static void test_dual_stack(void)
{
    exchange("127.0.0.1:0", "[::]:0", "127.0.0.1:%u", 1);
}

/* ---- timeouts, stop, junk ---- */

/* ---- ping-pong: one message in flight ---- */

#define PINGS 300
static void pp_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    side *c = user;
    size_t wl = gen(c->received, want);
    if (wl != n || memcmp(want, d, n) != 0)
        c->bad++;
    if (++c->received < PINGS) {
        size_t m = gen(c->received, want);
        if (pure_link_send(link, want, m) < 0)
            c->bad++;
    } else {
        pure_link_finish(link);
    }
}

static const pure_callbacks pp_cb = {
    .on_message = pp_message, .on_peer_finished = cli_finished, .on_closed = cli_closed};

/* Each turn of a ping-pong wakes each side for one datagram. The loop reads it and goes back to
 * epoll: a receive that fills fewer buffers than it offered says the socket is empty, so no
 * second read asks for nothing (before, every turn cost one empty recvmsg on each side). */
static void test_ping_pong_reads_once(void)
{
    side srv, cli;
    if (make_side(&srv, &srv_cb, "127.0.0.1:0", 1) || make_side(&cli, &pp_cb, "127.0.0.1:0", 0))
        return;
    pthread_t th;
    char to_s[PURE_ADDR_STRLEN];
    start_link(&srv, &cli, &th, "127.0.0.1:%u", to_s, sizeof to_s);
    static uint8_t buf[MAX_MSG];
    size_t n = gen(0, buf);
    CHECK_EQ(pure_link_send(cli.link, buf, n), 0);
    CHECK_EQ(pure_loop_run(cli.loop, 20ull * 1000000000u), 0);
    pure_loop_stop(srv.loop);
    pthread_join(th, NULL);
    CHECK_EQ(cli.received, PINGS);
    CHECK_EQ(cli.bad, 0);
    pure_loop_stats cs, ss;
    pure_loop_stats_get(cli.loop, &cs);
    pure_loop_stats_get(srv.loop, &ss);
    fprintf(stderr,
            "  ping-pong x %d: client recvmsg %llu empty %llu wakeups %llu | server recvmsg "
            "%llu empty %llu\n",
            PINGS, (unsigned long long)cs.recvmsg_calls, (unsigned long long)cs.recv_empty,
            (unsigned long long)cs.wakeups, (unsigned long long)ss.recvmsg_calls,
            (unsigned long long)ss.recv_empty);
    CHECK(cs.recvmsg_calls >= PINGS);
    CHECK(cs.recv_empty < PINGS / 4);
    CHECK(ss.recv_empty < PINGS / 4);
    free_side(&cli);
    free_side(&srv);
}

static void test_run_timeout(void)
{
    side s;
    if (make_side(&s, &srv_cb, "127.0.0.1:0", 1))
        return;
    uint64_t t0 = pure_now();
    CHECK_EQ(pure_loop_run(s.loop, 0), 0);
    CHECK_EQ(pure_loop_run(s.loop, 20000000), 0);
    uint64_t dt = pure_now() - t0;
    CHECK(dt >= 20000000);
    CHECK(dt < 1000000000);
    /* a stop requested before the run makes it return at once */
    pure_loop_stop(s.loop);
    t0 = pure_now();
    CHECK_EQ(pure_loop_run(s.loop, PURE_LOOP_FOREVER), 0);
    CHECK(pure_now() - t0 < 100000000);

    /* junk from the network is counted and dropped */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET,
                             .sin_port = htons(pure_loop_port(s.loop)),
                             .sin_addr.s_addr = htonl(0x7f000001)};
    static const uint8_t junk[][8] = {{0}, {0xff, 1, 2}, {2, 1, 2, 3, 4, 5, 6, 7}};
    for (int i = 0; i < 3; i++)
        CHECK(sendto(fd, junk[i], (size_t)(i + 1) * 2, 0, (struct sockaddr *)&to, sizeof to) > 0);
    CHECK(sendto(fd, junk[0], 0, 0, (struct sockaddr *)&to, sizeof to) == 0);
    close(fd);
    CHECK_EQ(pure_loop_run(s.loop, 50000000), 0);
    pure_ctx_stats cx;
    pure_ctx_stats_get(s.ctx, &cx);
    CHECK_EQ(cx.datagrams_in, 4);
    CHECK_EQ(cx.links, 0);
    pure_loop_stats ls;
    pure_loop_stats_get(s.loop, &ls);
    CHECK_EQ(ls.datagrams_received, 4);
    free_side(&s);

    /* binding junk and an address in use fail cleanly */
    pure_settings st;
    pure_settings_default(&st);
    CHECK_EQ(pure_keygen(st.private_key), 0);
    pure_ctx *ctx;
    CHECK_EQ(pure_ctx_new(&st, &ctx), 0);
    pure_loop *a, *b;
    CHECK_EQ(pure_loop_new(ctx, "localhost:0", &b), PURE_EINVAL);
    CHECK_EQ(pure_loop_new(ctx, "127.0.0.1:0", &a), 0);
    char addr[PURE_ADDR_STRLEN];
    CHECK_EQ(pure_addr_to_string(pure_loop_local_addr(a), addr, sizeof addr), 0);
    CHECK_EQ(pure_loop_new(ctx, addr, &b), PURE_EIO);
    pure_loop_free(a);
    pure_ctx_free(ctx);
}

static int fd_calls;
static void on_fd(pure_loop *loop, int fd, void *user)
{
    char c;
    fd_calls++;
    CHECK_EQ(read(fd, &c, 1), 1);
    CHECK_EQ(c, 'x');
    pure_loop_stop(loop);
}

static void test_watch_fd(void)
{
    side s;
    if (make_side(&s, &srv_cb, "127.0.0.1:0", 1))
        return;
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(pure_loop_watch_fd(s.loop, p[0], on_fd, NULL), 0);
    CHECK_EQ(pure_loop_watch_fd(s.loop, p[0], on_fd, NULL), PURE_EINVAL);
    CHECK_EQ(write(p[1], "x", 1), 1);
    uint64_t t0 = pure_now();
    CHECK_EQ(pure_loop_run(s.loop, 5000000000ull), 0);
    CHECK(pure_now() - t0 < 1000000000);
    CHECK_EQ(fd_calls, 1);
    CHECK_EQ(pure_loop_unwatch_fd(s.loop, p[0]), 0);
    CHECK_EQ(pure_loop_unwatch_fd(s.loop, p[0]), PURE_EINVAL);
    close(p[0]);
    close(p[1]);
    free_side(&s);
}

/* ---- failing fast: what the socket hears (docs/protocol.md, "Failing fast") ---- */

typedef struct fastfail {
    pure_loop *loop;
    int closes, error;
    uint64_t kind;
} fastfail;

static void ff_closed(pure_link *l, void *user, const pure_close_info *info)
{
    fastfail *f = user;
    f->closes++;
    f->error = info->error;
    f->kind = info->peer_code;
    pure_loop_stop(f->loop);
}

static const pure_callbacks ff_cb = {.on_closed = ff_closed};

/* A UDP port nothing listens on: bound, then closed. 0 if the family is missing. */
static uint16_t closed_port(int family)
{
    int fd = socket(family, SOCK_DGRAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_family = (sa_family_t)family;
    if (family == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(0x7f000001);
    else
        ((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
    socklen_t sl = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    uint16_t port = 0;
    if (bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port); /* same offset in sockaddr_in6 */
    close(fd);
    return port;
}

static int junk_fd;
static void answer_junk(pure_loop *loop, int fd, void *user)
{
    uint8_t buf[2048];
    struct sockaddr_storage from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    if (n > 0)
        (void)sendto(fd, "SSH-2.0-OpenSSH\r\n", 17, 0, (struct sockaddr *)&from, fl);
}

/* Connects from a loop bound to `bind` to `to` and runs until the link closes (at most 5 s):
 * returns the time it took, in ns, with the error and kind in *f. */
static uint64_t ff_run(const char *bind, const char *to, fastfail *f)
{
    memset(f, 0, sizeof *f);
    pure_settings st;
    pure_settings_default(&st);
    st.callbacks = &ff_cb;
    CHECK_EQ(pure_keygen(st.private_key), 0);
    pure_ctx *ctx;
    CHECK_EQ(pure_ctx_new(&st, &ctx), 0);
    if (pure_loop_new(ctx, bind, &f->loop) != 0) {
        pure_ctx_free(ctx);
        return 0;
    }
    if (junk_fd >= 0)
        CHECK_EQ(pure_loop_watch_fd(f->loop, junk_fd, answer_junk, NULL), 0);
    pure_addr a;
    CHECK_EQ(pure_addr_from_string(&a, to), 0);
    uint8_t key[PURE_KEY_LEN];
    memset(key, 3, sizeof key);
    pure_link *link;
    uint64_t t0 = pure_now();
    CHECK_EQ(pure_connect(ctx, &a, key, "echo", f, &link, t0), 0);
    CHECK_EQ(pure_loop_run(f->loop, 5000000000ull), 0);
    uint64_t dt = pure_now() - t0;
    pure_loop_free(f->loop);
    pure_ctx_free(ctx);
    return dt;
}

static void test_fail_fast(void)
{
    char to[64];
    fastfail f;
    junk_fd = -1;
    /* nothing listens: the ICMP port unreachable ends the handshake at once */
    snprintf(to, sizeof to, "127.0.0.1:%u", closed_port(AF_INET));
    uint64_t dt = ff_run("127.0.0.1:0", to, &f);
    CHECK_EQ(f.closes, 1);
    CHECK_EQ(f.error, PURE_EUNREACH);
    CHECK_EQ(f.kind, PURE_UNREACH_PORT);
    CHECK(dt < 100000000);
    printf("closed port: %s (kind %llu) after %.1f ms\n", pure_strerror(f.error),
           (unsigned long long)f.kind, (double)dt / 1e6);
    /* an IPv6 address from an IPv4 socket: this host refuses the send */
    snprintf(to, sizeof to, "[::1]:%u", 9);
    dt = ff_run("127.0.0.1:0", to, &f);
    CHECK_EQ(f.error, PURE_EUNREACH);
    CHECK_EQ(f.kind, PURE_UNREACH_FAMILY);
    CHECK(dt < 100000000);
    /* a UDP service that is not Pure: after the hint's grace */
    junk_fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in j = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t jl = sizeof j;
    CHECK_EQ(bind(junk_fd, (struct sockaddr *)&j, sizeof j), 0);
    CHECK_EQ(getsockname(junk_fd, (struct sockaddr *)&j, &jl), 0);
    snprintf(to, sizeof to, "127.0.0.1:%u", ntohs(j.sin_port));
    dt = ff_run("127.0.0.1:0", to, &f);
    CHECK_EQ(f.error, PURE_ENOTPURE);
    CHECK(dt >= PURE_HS_HINT_GRACE_MIN && dt < PURE_HS_HINT_GRACE_MIN + 300000000);
    printf("not Pure: %s after %.1f ms\n", pure_strerror(f.error), (double)dt / 1e6);
    close(junk_fd);
    junk_fd = -1;
    /* IPv6, and IPv4 through a dual-stack IPv6 socket (ICMP errors at both levels) */
    uint16_t p6 = closed_port(AF_INET6);
    if (!p6) {
        printf("SKIP IPv6 cases: no IPv6\n");
        return;
    }
    snprintf(to, sizeof to, "[::1]:%u", p6);
    dt = ff_run("[::1]:0", to, &f);
    CHECK_EQ(f.error, PURE_EUNREACH);
    CHECK_EQ(f.kind, PURE_UNREACH_PORT);
    CHECK(dt < 100000000);
    snprintf(to, sizeof to, "127.0.0.1:%u", closed_port(AF_INET));
    dt = ff_run("[::]:0", to, &f);
    CHECK_EQ(f.error, PURE_EUNREACH);
    CHECK_EQ(f.kind, PURE_UNREACH_PORT);
    CHECK(dt < 100000000);
}

int main(void)
{
    RUN(test_addr_parse);
    RUN(test_ipv4);
    RUN(test_ipv6);
    RUN(test_no_offload);
    RUN(test_dual_stack);
    RUN(test_ping_pong_reads_once);
    RUN(test_run_timeout);
    RUN(test_watch_fd);
    RUN(test_fail_fast);
    return pure_test_finish();
}

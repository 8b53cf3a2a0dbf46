/* SPDX-License-Identifier: MIT */
/* steer_test.c: one context per thread on one port (pure_loop.h, "Every core"). The index
 * partition: every link index a context draws carries its thread's top bits, the other bits
 * stay random, and older settings versions never read the fields. The steering program, run by
 * a small classic-BPF interpreter here, agrees with its C twin on every kind of datagram. Then
 * the real thing on loopback: a group of 4 loops, crafted datagrams sent from client sockets and
 * each received by the socket of the thread its index names, from any source port (a NAT
 * rebinding), INITs spread over the threads, and a GSO train of packets for all four threads
 * read by each owner's context only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crypto.h"
#include "pure.h"
#include "pure_loop.h"
#include "steer.h"
#include "test.h"
#include "udp.h"
#include "wire.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static void base_settings(pure_settings *s)
{
    pure_settings_default(s);
    memset(s->private_key, 0x42, PURE_KEY_LEN);
    s->crypto = &pure_crypto_null;
}

/* ---- the index partition ---- */

/* Opens `links` links from a context made with s and returns the sender index of each INIT. */
static unsigned init_indices(const pure_settings *s, uint32_t *out, unsigned links)
{
    pure_ctx *ctx = NULL;
    CHECK_EQ(pure_ctx_new(s, &ctx), 0);
    if (!ctx)
        return 0;
    pure_addr to;
    pure_addr_from_string(&to, "127.0.0.1:9");
    uint8_t peer[PURE_KEY_LEN];
    memset(peer, 7, sizeof peer);
    for (unsigned i = 0; i < links; i++) {
        pure_link *l;
        CHECK_EQ(pure_connect(ctx, &to, peer, "x", NULL, &l, 0), 0);
    }
    unsigned got = 0;
    uint8_t buf[65536];
    size_t seg;
    pure_addr dst;
    int64_t n;
    while ((n = pure_ctx_write(ctx, buf, sizeof buf, &seg, &dst, 0)) > 0)
        for (int64_t o = 0; o < n; o += (int64_t)seg)
            if (buf[o] == PURE_PKT_INIT && got < links)
                out[got++] = pure_wire_index(buf + o);
    pure_ctx_free(ctx);
    return got;
}

/* Budgets shared by a group's contexts: each gets 1/n, rounded up, within the floors, so the
 * group holds no more than one context would (pure_serve --threads N did not, before: N contexts
 * of 256 MiB receive memory and 16384 half-open handshakes each). */
static void test_share_budgets(void)
{
    pure_settings s;
    pure_settings_default(&s);
    uint64_t mem = s.max_receive_memory;
    uint32_t links = s.max_links, half = s.max_half_open, load = s.handshake_load;
    uint32_t per_addr = s.half_open_per_addr, inits = s.inits_per_addr;
    CHECK_EQ(pure_settings_share_budgets(&s, 1), 0); /* one thread: unchanged */
    CHECK(s.max_receive_memory == mem && s.max_links == links && s.max_half_open == half &&
          s.handshake_load == load);
    CHECK_EQ(pure_settings_share_budgets(&s, 3), 0);
    CHECK_EQ(s.max_receive_memory, (mem + 2) / 3);
    CHECK_EQ(s.max_links, (links + 2) / 3);
    CHECK_EQ(s.max_half_open, (half + 2) / 3);
    CHECK_EQ(s.handshake_load, (load + 2) / 3);
    CHECK(s.half_open_per_addr == per_addr && s.inits_per_addr == inits); /* per address: kept */
    /* the floors: at least one message's memory, one link, one handshake; load 0 stays 0 */
    base_settings(&s);
    s.max_receive_memory = s.max_message_size;
    s.max_links = 5;
    s.max_half_open = 1;
    s.handshake_load = 0;
    CHECK_EQ(pure_settings_share_budgets(&s, 256), 0);
    CHECK_EQ(s.max_receive_memory, s.max_message_size);
    CHECK_EQ(s.max_links, 1);
    CHECK_EQ(s.max_half_open, 1);
    CHECK_EQ(s.handshake_load, 0);
    pure_ctx *ctx = NULL;
    CHECK_EQ(pure_ctx_new(&s, &ctx), 0); /* still valid settings */
    pure_ctx_free(ctx);
    CHECK_EQ(pure_settings_share_budgets(&s, 0), PURE_EINVAL);
    CHECK_EQ(pure_settings_share_budgets(&s, 257), PURE_EINVAL);
    CHECK_EQ(pure_settings_share_budgets(NULL, 2), PURE_EINVAL);
}

static void test_index_partition(void)
{
    pure_settings s;
    base_settings(&s);
    CHECK_EQ(pure_settings_set_thread(&s, 5, 8), 0);
    CHECK_EQ(s.index_top_bits, 3);
    CHECK_EQ(s.index_top, 5);
    enum {
        LINKS = 64
    }; /* a context starts at most 64 handshakes to one address at once */
    uint32_t idx[LINKS];
    CHECK_EQ(init_indices(&s, idx, LINKS), LINKS);
    uint32_t ones = 0, zeros = 0;
    for (unsigned i = 0; i < LINKS; i++) {
        CHECK_EQ(idx[i] >> 29, 5);
        CHECK(idx[i] != 0);
        ones |= idx[i];
        zeros |= ~idx[i];
        for (unsigned j = 0; j < i; j++)
            CHECK(idx[i] != idx[j]);
    }
    CHECK_EQ(ones & 0x1fffffffu, 0x1fffffffu); /* every other bit takes both values */
    CHECK_EQ(zeros & 0x1fffffffu, 0x1fffffffu);
    /* thread 0 of 3 (2 bits): top bits 00, and an index is still never 0 */
    CHECK_EQ(pure_settings_set_thread(&s, 0, 3), 0);
    CHECK_EQ(s.index_top_bits, 2);
    CHECK_EQ(init_indices(&s, idx, LINKS), LINKS);
    for (unsigned i = 0; i < LINKS; i++)
        CHECK(idx[i] >> 30 == 0 && idx[i] != 0);
    /* one thread: no partition */
    CHECK_EQ(pure_settings_set_thread(&s, 0, 1), 0);
    CHECK_EQ(s.index_top_bits, 0);
    CHECK_EQ(pure_settings_set_thread(&s, 3, 3), PURE_EINVAL);
    CHECK_EQ(pure_settings_set_thread(&s, 0, 0), PURE_EINVAL);
    CHECK_EQ(pure_settings_set_thread(&s, 0, 257), PURE_EINVAL);
    CHECK_EQ(pure_settings_set_thread(&s, 255, 256), 0);
    CHECK_EQ(s.index_top_bits, 8);
    /* validation */
    pure_ctx *ctx = NULL;
    base_settings(&s);
    s.index_top_bits = PURE_INDEX_TOP_BITS_MAX + 1;
    CHECK_EQ(pure_ctx_new(&s, &ctx), PURE_EINVAL);
    s.index_top_bits = 2;
    s.index_top = 4;
    CHECK_EQ(pure_ctx_new(&s, &ctx), PURE_EINVAL);
    /* a version 3 caller's struct ends before the fields: whatever follows is not read */
    base_settings(&s);
    s.version = 3;
    s.index_top_bits = 0xdead;
    s.index_top = 0xbeef;
    CHECK_EQ(init_indices(&s, idx, 64), 64);
    unsigned tops = 0;
    for (unsigned i = 0; i < 64; i++)
        tops |= 1u << (idx[i] >> 29);
    CHECK(tops != 1u << 5 && __builtin_popcount(tops) > 2); /* random top bits */
}

/* ---- the program, run in user space ---- */

/* Classic BPF as the kernel runs it on a reuseport group, for the instructions the program uses:
 * a load past the end returns 0. */
static uint32_t run_cbpf(const struct sock_filter *p, unsigned len, const uint8_t *d, size_t n)
{
    uint32_t a = 0;
    for (unsigned pc = 0; pc < len; pc++) {
        const struct sock_filter *f = &p[pc];
        switch (f->code) {
        case BPF_LD | BPF_B | BPF_ABS:
            if (f->k >= n)
                return 0;
            a = d[f->k];
            break;
        case BPF_JMP | BPF_JEQ | BPF_K: pc += a == f->k ? f->jt : f->jf; break;
        case BPF_ALU | BPF_RSH | BPF_K: a >>= f->k; break;
        case BPF_ALU | BPF_MOD | BPF_K: a %= f->k; break;
        case BPF_RET | BPF_K: return f->k;
        case BPF_RET | BPF_A: return a;
        default: CHECK(!"an instruction the interpreter does not know"); return 0xdeadbeef;
        }
    }
    CHECK(!"the program ran off its end");
    return 0xdeadbeef;
}

static void test_program(void)
{
    struct sock_filter p[PURE_STEER_PROG_MAX];
    static const unsigned ns[] = {1, 2, 3, 4, 5, 8, 16, 17, 64, 100, 256};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        unsigned n = ns[t], len = pure_steer_program(p, n);
        CHECK(len <= PURE_STEER_PROG_MAX);
        unsigned bits = pure_steer_bits(n);
        CHECK(n <= 1u << bits && (bits == 0 || n > 1u << (bits - 1)));
        /* known cases: each thread's DATA, COOKIE, REJECT and RESP */
        for (unsigned th = 0; th < n; th++) {
            uint32_t index = (bits ? th << (32 - bits) : 0) | (rnd() >> bits) | 1;
            uint8_t d[64];
            for (size_t i = 0; i < sizeof d; i++)
                d[i] = (uint8_t)rnd();
            static const uint8_t types[] = {0x08, 0x09, 0x03, 0x04};
            for (size_t k = 0; k < sizeof types; k++) {
                pure_wire_put_header(d, types[k], index);
                CHECK_EQ(run_cbpf(p, len, d, sizeof d), th);
                CHECK_EQ(pure_steer_owner(d, sizeof d, n), th);
            }
            /* RESP: the sender's index first (another context's), the receiver's second */
            pure_wire_put_header(d, 0x02, rnd());
            pure_put_u32le(d + PURE_WIRE_SECOND_AT, index);
            CHECK_EQ(run_cbpf(p, len, d, sizeof d), th);
            CHECK_EQ(pure_steer_owner(d, sizeof d, n), th);
        }
        /* INIT: the sender's lowest byte mod n */
        uint8_t init[64] = {0x01, 0x37};
        CHECK_EQ(run_cbpf(p, len, init, sizeof init), 0x37 % n);
        /* random datagrams of every type and length: the program and its twin agree */
        for (int i = 0; i < 20000; i++) {
            uint8_t d[16];
            size_t dl = rnd() % 17;
            for (size_t j = 0; j < dl; j++)
                d[j] = (uint8_t)rnd();
            if (dl && rnd() % 2)
                d[0] = (uint8_t)(rnd() % 11);
            CHECK_EQ(run_cbpf(p, len, d, dl), pure_steer_owner(d, dl, n));
        }
    }
}

/* ---- on loopback ---- */

enum {
    N = 4
};

typedef struct grp {
    pure_ctx *ctx[N];
    pure_loop_group *g;
    struct sockaddr_in to;
} grp;

static int grp_open(grp *g)
{
    memset(g, 0, sizeof *g);
    for (unsigned i = 0; i < N; i++) {
        pure_settings s;
        base_settings(&s);
        CHECK_EQ(pure_settings_set_thread(&s, i, N), 0);
        CHECK_EQ(pure_ctx_new(&s, &g->ctx[i]), 0);
    }
    int rc = pure_loop_group_new(g->ctx, N, "127.0.0.1:0", &g->g);
    CHECK_EQ(rc, 0);
    if (rc) {
        fprintf(stderr, "pure_loop_group_new: %s\n", strerror(errno));
        return rc;
    }
    memcpy(&g->to, pure_loop_local_addr(pure_loop_group_loop(g->g, 0))->bytes, sizeof g->to);
    for (unsigned i = 1; i < N; i++)
        CHECK_EQ(pure_loop_port(pure_loop_group_loop(g->g, i)),
                 pure_loop_port(pure_loop_group_loop(g->g, 0)));
    return 0;
}

static void grp_close(grp *g)
{
    pure_loop_group_free(g->g);
    for (unsigned i = 0; i < N; i++)
        pure_ctx_free(g->ctx[i]);
}

/* Which group socket receives the next datagram: its number, or -1 after a second. */
static int which(grp *g)
{
    struct pollfd pf[N];
    for (unsigned i = 0; i < N; i++)
        pf[i] = (struct pollfd){.fd = pure_loop_udp(pure_loop_group_loop(g->g, i))->fd,
                                .events = POLLIN};
    if (poll(pf, N, 1000) <= 0)
        return -1;
    int got = -1;
    for (unsigned i = 0; i < N; i++) {
        uint8_t b[2048];
        while (recv(pf[i].fd, b, sizeof b, MSG_DONTWAIT) >= 0) {
            CHECK_EQ(got, -1); /* one datagram, one socket */
            got = (int)i;
        }
    }
    return got;
}

static int client_socket(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    return fd;
}

static void test_kernel_steering(void)
{
    grp g;
    if (grp_open(&g))
        return;
    uint8_t d[64];
    for (size_t i = 0; i < sizeof d; i++)
        d[i] = (uint8_t)rnd();
    int fd = client_socket();
    for (unsigned th = 0; th < N; th++) {
        uint32_t index = th << 30 | rnd() >> 2;
        static const uint8_t types[] = {0x08, 0x09, 0x03, 0x04};
        for (size_t k = 0; k < sizeof types; k++) {
            pure_wire_put_header(d, types[k], index);
            /* from the same source port, then from new ones (a rebinding NAT): same socket */
            for (int rebind = 0; rebind < 3; rebind++) {
                int s = rebind ? client_socket() : fd;
                CHECK_EQ(sendto(s, d, sizeof d, 0, (struct sockaddr *)&g.to, sizeof g.to),
                         sizeof d);
                CHECK_EQ(which(&g), th);
                if (rebind)
                    close(s);
            }
        }
        pure_wire_put_header(d, 0x02, rnd());
        pure_put_u32le(d + PURE_WIRE_SECOND_AT, index);
        CHECK_EQ(sendto(fd, d, sizeof d, 0, (struct sockaddr *)&g.to, sizeof g.to), sizeof d);
        CHECK_EQ(which(&g), th);
    }
    /* INITs from one source port spread: thread = the sender index's low byte mod N */
    unsigned per[N] = {0};
    for (unsigned i = 0; i < 64; i++) {
        uint32_t sender = rnd();
        pure_wire_put_header(d, 0x01, sender);
        CHECK_EQ(sendto(fd, d, sizeof d, 0, (struct sockaddr *)&g.to, sizeof g.to), sizeof d);
        int w = which(&g);
        CHECK_EQ(w, (sender & 0xff) % N);
        if (w >= 0)
            per[w]++;
    }
    for (unsigned i = 0; i < N; i++)
        CHECK(per[i] > 0);
    close(fd);
    grp_close(&g);
}

/* A GSO train of four DATA packets, one per thread (a client's links joined in one burst, as
 * pure_ctx_write does for small packets to one address): the kernel steers the train by its
 * first packet; that loop hands the others to their owners. Every context reads exactly its own
 * packet (counted as an unknown link: no such link exists here) and nobody else's. */
static void test_train_handoff(void)
{
    grp g;
    if (grp_open(&g))
        return;
    enum {
        SEG = 100
    };
    uint8_t train[N * SEG];
    for (unsigned i = 0; i < N; i++) {
        for (unsigned j = 0; j < SEG; j++)
            train[i * SEG + j] = (uint8_t)rnd();
        unsigned th = (i + 2) % N; /* the first packet is thread 2's */
        pure_wire_put_data_header(train + i * SEG, 0, th << 30 | rnd() >> 2, i);
    }
    int fd = client_socket();
    int seg = SEG;
    int gso = setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) == 0;
    CHECK_EQ(sendto(fd, train, sizeof train, 0, (struct sockaddr *)&g.to, sizeof g.to),
             sizeof train);
    close(fd);
    /* run each loop a few times so reads and hand-offs settle */
    for (int round = 0; round < 5; round++)
        for (unsigned i = 0; i < N; i++)
            CHECK_EQ(pure_loop_run(pure_loop_group_loop(g.g, i), 20000000u), 0);
    uint64_t off = 0, in = 0;
    for (unsigned i = 0; i < N; i++) {
        pure_ctx_stats cs;
        pure_ctx_stats_get(g.ctx[i], &cs);
        CHECK_EQ(cs.dropped_unknown_link, 1);
        pure_loop_steer_stats ss;
        pure_loop_steer_stats_get(pure_loop_group_loop(g.g, i), &ss, sizeof ss);
        CHECK_EQ(ss.handoff_dropped, 0);
        off += ss.handed_off;
        in += ss.handed_in;
        if (i != 2)
            CHECK_EQ(ss.handed_off, 0);
    }
    CHECK_EQ(off, in);
    /* with GSO and GRO on loopback the train arrives whole: three hand-offs */
    printf("  gso %d: %llu datagrams handed off\n", gso, (unsigned long long)off);
    if (gso && pure_loop_udp(pure_loop_group_loop(g.g, 2))->gro)
        CHECK_EQ(off, N - 1);
    grp_close(&g);
}

/* A second group on the port of a first one joins the first's reuseport group after its sockets:
 * the order check sees that its probes do not reach its own sockets, and fails. */
static void test_foreign_socket(void)
{
    grp g;
    if (grp_open(&g))
        return;
    char addr[PURE_ADDR_STRLEN];
    pure_addr_to_string(pure_loop_local_addr(pure_loop_group_loop(g.g, 0)), addr, sizeof addr);
    pure_ctx *ctx[2];
    for (unsigned i = 0; i < 2; i++) {
        pure_settings s;
        base_settings(&s);
        pure_settings_set_thread(&s, i, 2);
        CHECK_EQ(pure_ctx_new(&s, &ctx[i]), 0);
    }
    pure_loop_group *g2 = NULL;
    CHECK_EQ(pure_loop_group_new(ctx, 2, addr, &g2), PURE_EIO);
    CHECK(errno == ETIMEDOUT || errno == EADDRINUSE); /* probe 0 went to the first group */
    CHECK(g2 == NULL);
    for (unsigned i = 0; i < 2; i++)
        pure_ctx_free(ctx[i]);
    CHECK_EQ(pure_loop_group_new(NULL, 2, addr, &g2), PURE_EINVAL);
    CHECK_EQ(pure_loop_group_new(ctx, 0, addr, &g2), PURE_EINVAL);
    CHECK_EQ(pure_loop_group_new(ctx, 257, addr, &g2), PURE_EINVAL);
    CHECK(pure_loop_group_loop(g.g, N) == NULL);
    grp_close(&g);
}

/* A fleet's server id (settings version 5): the server_id_bits just below the thread bits, so a
 * director routes on them; the rest stays random, and a version 4 struct leaves them unset. */
static void test_server_id(void)
{
    enum {
        LINKS = 64
    };
    uint32_t idx[LINKS];
    pure_settings s;
    base_settings(&s);
    CHECK_EQ(pure_settings_set_thread(&s, 2, 4), 0); /* thread bits 10 */
    s.server_id_bits = 8;
    s.server_id = 0xa5;
    CHECK_EQ(init_indices(&s, idx, LINKS), LINKS);
    uint32_t ones = 0, zeros = 0;
    for (unsigned i = 0; i < LINKS; i++) {
        CHECK_EQ(idx[i] >> 30, 2);
        CHECK_EQ((idx[i] >> 22) & 0xff, 0xa5);
        ones |= idx[i];
        zeros |= ~idx[i];
    }
    CHECK_EQ(ones & 0x3fffffu, 0x3fffffu); /* the low 22 bits take both values */
    CHECK_EQ(zeros & 0x3fffffu, 0x3fffffu);
    /* no threads: the server id is the top byte, the last byte of the index on the wire */
    base_settings(&s);
    s.server_id_bits = 2;
    s.server_id = 3;
    CHECK_EQ(init_indices(&s, idx, LINKS), LINKS);
    for (unsigned i = 0; i < LINKS; i++)
        CHECK_EQ(idx[i] >> 30, 3);
    /* validation: too many bits, an id that does not fit, more than 16 fixed bits */
    pure_ctx *ctx = NULL;
    s.server_id_bits = PURE_SERVER_ID_BITS_MAX + 1;
    s.server_id = 0;
    CHECK_EQ(pure_ctx_new(&s, &ctx), PURE_EINVAL);
    s.server_id_bits = 2;
    s.server_id = 4;
    CHECK_EQ(pure_ctx_new(&s, &ctx), PURE_EINVAL);
    CHECK_EQ(pure_settings_set_thread(&s, 255, 256), 0);
    s.server_id_bits = 8;
    s.server_id = 1;
    CHECK_EQ(pure_ctx_new(&s, &ctx), 0);
    pure_ctx_free(ctx);
    ctx = NULL;
    s.server_id_bits = 8; /* 8 + 8 = 16 is the most */
    s.index_top_bits = 8;
    CHECK_EQ(pure_ctx_new(&s, &ctx), 0);
    pure_ctx_free(ctx);
    /* a version 4 caller's struct ends before the fields: whatever follows is not read */
    base_settings(&s);
    s.version = 4;
    s.server_id_bits = 0xdead;
    s.server_id = 0xbeef;
    CHECK_EQ(init_indices(&s, idx, LINKS), LINKS);
    unsigned tops = 0;
    for (unsigned i = 0; i < LINKS; i++)
        tops |= 1u << (idx[i] >> 29);
    CHECK(__builtin_popcount(tops) > 2); /* random top bits */
}

int main(void)
{
    RUN(test_share_budgets);
    RUN(test_index_partition);
    RUN(test_server_id);
    RUN(test_program);
    RUN(test_kernel_steering);
    RUN(test_train_handoff);
    RUN(test_foreign_socket);
    return pure_test_finish();
}

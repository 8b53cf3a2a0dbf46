/* SPDX-License-Identifier: MIT */
/* group.c: a group of loops sharing one port, one per thread (pure_loop.h, "Every core"): n
 * SO_REUSEPORT sockets bound in order, the classic BPF program that steers each datagram to the
 * loop owning its link (steer.h), the check that socket i is the kernel's socket i, and the
 * queue through which a loop hands a datagram it should not have (one datagram of a GRO or GSO
 * train the kernel steered by its first) to the loop that owns it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "steer.h"
#include "udp.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

/* ---- the steering rule ---- */

unsigned pure_steer_bits(unsigned n)
{
    unsigned b = 0;
    while ((1u << b) < n)
        b++;
    return b;
}

#define INDEX_TOP_BYTE 4  /* the u32 LE index at byte 1: its most significant byte */
#define SECOND_TOP_BYTE 8 /* RESP's receiver index at byte 5 */
#define ANY 0xffffffffu   /* out of range: the kernel's hash picks */

unsigned pure_steer_program(struct sock_filter *p, unsigned n)
{
    unsigned shift = 8 - pure_steer_bits(n);
    unsigned i = 0;
    /* 0..7: dispatch on the type byte (a jump from i to t has jt = t - i - 1) */
    p[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0);
    p[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x08, 6, 0); /* DATA0 */
    p[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x09, 5, 0); /* DATA1 */
    p[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x03, 4, 0); /* COOKIE */
    p[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x04, 3, 0); /* REJECT */
    p[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 5, 0); /* RESP */
    p[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x01, 7, 0); /* INIT */
    p[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ANY);
    /* 8..10: the receiver index's top bits */
    p[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, INDEX_TOP_BYTE);
    p[i++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, shift);
    p[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
    /* 11..13: RESP's second index's top bits */
    p[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, SECOND_TOP_BYTE);
    p[i++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, shift);
    p[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
    /* 14..16: INIT: the sender's own random index spreads new links */
    p[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1);
    p[i++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n);
    p[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
    return i;
}

uint32_t pure_steer_owner(const uint8_t *d, size_t len, unsigned n)
{
    unsigned shift = 8 - pure_steer_bits(n);
    if (len < 1)
        return 0;
    switch (d[0]) {
    case 0x08:
    case 0x09:
    case 0x03:
    case 0x04: return len > INDEX_TOP_BYTE ? (uint32_t)d[INDEX_TOP_BYTE] >> shift : 0;
    case 0x02: return len > SECOND_TOP_BYTE ? (uint32_t)d[SECOND_TOP_BYTE] >> shift : 0;
    case 0x01: return len > 1 ? d[1] % n : 0;
    default: return ANY;
    }
}

/* ---- the hand-off queue of each loop ---- */

#define INBOX_SLOTS 256
#define INBOX_SLOT 2048

typedef struct inbox_slot {
    pure_addr from;
    uint32_t len;
    uint8_t data[INBOX_SLOT];
} inbox_slot;

/* One per loop. Other loops append under mu; the owner reads the slots [head, head + taken)
 * without the lock (writers only ever fill slots past head + count) and then releases them. */
typedef struct member {
    struct pure_loop_group *g;
    unsigned index;
    pure_loop *loop;
    int evfd;
    int mu_ok;
    pthread_mutex_t mu;
    uint32_t head, count;
    inbox_slot *slots;
} member;

struct pure_loop_group {
    unsigned n;
    member *m;
};

/* udp.c's hook, on the receiving loop's thread: queue d to its owner if that is another loop. */
static int handoff(void *arg, const uint8_t *d, size_t len, const pure_addr *from)
{
    member *self = arg;
    uint32_t owner = pure_steer_owner(d, len, self->g->n);
    if (owner >= self->g->n || owner == self->index)
        return 0;
    member *to = &self->g->m[owner];
    pure_loop_steer_stats *st = pure_loop_steer(self->loop);
    if (len > INBOX_SLOT) {
        st->handoff_dropped++;
        return 1;
    }
    pthread_mutex_lock(&to->mu);
    if (to->count == INBOX_SLOTS) {
        pthread_mutex_unlock(&to->mu);
        st->handoff_dropped++;
        return 1;
    }
    inbox_slot *s = &to->slots[(to->head + to->count) % INBOX_SLOTS];
    s->from = *from;
    s->len = (uint32_t)len;
    memcpy(s->data, d, len);
    int wake = to->count++ == 0; /* else the owner is woken already or still draining */
    pthread_mutex_unlock(&to->mu);
    st->handed_off++;
    if (wake) {
        uint64_t one = 1;
        ssize_t r = write(to->evfd, &one, sizeof one);
        (void)r;
    }
    return 1;
}

/* The owner's side, a pure_loop_watch_fd handler: read everything queued. */
static void drain_inbox(pure_loop *loop, int fd, void *user)
{
    member *m = user;
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r;
    pure_ctx *ctx = pure_loop_ctx(loop);
    pure_loop_steer_stats *st = pure_loop_steer(loop);
    for (;;) {
        pthread_mutex_lock(&m->mu);
        uint32_t taken = m->count, head = m->head;
        pthread_mutex_unlock(&m->mu);
        if (!taken)
            return;
        uint64_t now = pure_now();
        for (uint32_t i = 0; i < taken; i++) {
            inbox_slot *s = &m->slots[(head + i) % INBOX_SLOTS];
            (void)pure_ctx_read(ctx, &s->from, s->data, s->len, now);
        }
        st->handed_in += taken;
        pthread_mutex_lock(&m->mu);
        m->head = (m->head + taken) % INBOX_SLOTS;
        m->count -= taken;
        pthread_mutex_unlock(&m->mu);
    }
}

/* ---- the group ---- */

int pure_settings_set_thread(pure_settings *s, unsigned thread, unsigned threads)
{
    if (!s || threads == 0 || threads > PURE_LOOP_GROUP_MAX || thread >= threads)
        return PURE_EINVAL;
    s->index_top_bits = pure_steer_bits(threads);
    s->index_top = thread;
    return 0;
}

static uint64_t share(uint64_t budget, unsigned n, uint64_t floor)
{
    uint64_t v = budget / n + (budget % n != 0);
    return v < floor ? floor : v;
}

int pure_settings_share_budgets(pure_settings *s, unsigned threads)
{
    if (!s || threads == 0 || threads > PURE_LOOP_GROUP_MAX)
        return PURE_EINVAL;
    s->max_receive_memory = share(s->max_receive_memory, threads, s->max_message_size);
    s->max_links = (uint32_t)share(s->max_links, threads, 1);
    s->max_half_open = (uint32_t)share(s->max_half_open, threads, 1);
    if (s->handshake_load)
        s->handshake_load = (uint32_t)share(s->handshake_load, threads, 1);
    return 0;
}

pure_loop *pure_loop_group_loop(const pure_loop_group *g, unsigned i)
{
    return g && i < g->n ? g->m[i].loop : NULL;
}

void pure_loop_group_free(pure_loop_group *g)
{
    if (!g)
        return;
    for (unsigned i = 0; i < g->n; i++) {
        member *m = &g->m[i];
        pure_loop_free(m->loop);
        if (m->evfd >= 0)
            close(m->evfd);
        if (m->mu_ok)
            pthread_mutex_destroy(&m->mu);
        free(m->slots);
    }
    free(g->m);
    free(g);
}

/* Where a probe goes: the bound address, or loopback for a wildcard one. */
static socklen_t probe_target(const pure_addr *local, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    memcpy(ss, local->bytes, local->len);
    if (ss->ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        if (a->sin_addr.s_addr == htonl(INADDR_ANY))
            a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return sizeof *a;
    }
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr))
        a->sin6_addr = in6addr_loopback;
    return sizeof *a;
}

#define PROBE_LEN 40
static const uint8_t probe_magic[16] = "pure-steer-probe";

/* Sends socket i a DATA-shaped probe naming thread i, and requires socket i to be the one that
 * receives it: the kernel numbers a reuseport group's sockets in the order they joined, and
 * only this shows that the order is ours. Returns 0 or PURE_EIO (errno set). */
static int check_order(pure_loop_group *g)
{
    unsigned n = g->n, shift = 8 - pure_steer_bits(n);
    struct sockaddr_storage to;
    socklen_t tolen = probe_target(pure_loop_local_addr(g->m[0].loop), &to);
    int fd = socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return PURE_EIO;
    uint8_t nonce[8];
    uint64_t t = pure_now() ^ (uint64_t)(uintptr_t)g;
    memcpy(nonce, &t, sizeof nonce);
    for (unsigned i = 0; i < n; i++) {
        uint8_t p[PROBE_LEN] = {0x08, 0, 0, 0, (uint8_t)(i << shift)};
        memcpy(p + 12, probe_magic, sizeof probe_magic);
        memcpy(p + 28, nonce, sizeof nonce);
        memcpy(p + 36, &i, 4);
        if (sendto(fd, p, sizeof p, 0, (struct sockaddr *)&to, tolen) != (ssize_t)sizeof p) {
            int e = errno;
            close(fd);
            errno = e;
            return PURE_EIO;
        }
    }
    close(fd);
    struct pollfd *pf = calloc(n, sizeof *pf);
    if (!pf) {
        errno = ENOMEM;
        return PURE_EIO;
    }
    for (unsigned i = 0; i < n; i++)
        pf[i] = (struct pollfd){.fd = pure_loop_udp(g->m[i].loop)->fd, .events = POLLIN};
    unsigned seen = 0;
    int rc = 0;
    uint64_t until = pure_now() + 1000000000u;
    while (seen < n && !rc) {
        uint64_t now = pure_now();
        if (now >= until) {
            errno = ETIMEDOUT;
            rc = PURE_EIO;
            break;
        }
        if (poll(pf, n, (int)((until - now) / 1000000u) + 1) < 0 && errno != EINTR) {
            rc = PURE_EIO;
            break;
        }
        for (unsigned i = 0; i < n && !rc; i++) {
            uint8_t p[PURE_UDP_BUF];
            ssize_t r;
            while ((r = recv(pf[i].fd, p, sizeof p, MSG_DONTWAIT)) >= 0) {
                unsigned k;
                if (r != PROBE_LEN || memcmp(p + 12, probe_magic, sizeof probe_magic) ||
                    memcmp(p + 28, nonce, sizeof nonce))
                    continue; /* someone else's datagram, during start-up: dropped */
                memcpy(&k, p + 36, 4);
                if (k != i) { /* probe k reached socket i: the group's order is not ours */
                    errno = EADDRINUSE;
                    rc = PURE_EIO;
                    break;
                }
                seen++;
            }
        }
    }
    free(pf);
    return rc;
}

int pure_loop_group_new(pure_ctx *const *ctxs, unsigned n, const char *bind, pure_loop_group **out)
{
    if (!ctxs || !bind || !out || n == 0 || n > PURE_LOOP_GROUP_MAX)
        return PURE_EINVAL;
    pure_addr a;
    if (pure_addr_from_string(&a, bind))
        return PURE_EINVAL;
    pure_loop_group *g = calloc(1, sizeof *g);
    if (!g || !(g->m = calloc(n, sizeof *g->m))) {
        free(g);
        return PURE_ENOMEM;
    }
    int rc = 0;
    char port_bind[PURE_ADDR_STRLEN];
    for (unsigned i = 0; i < n && !rc; i++) {
        member *m = &g->m[i];
        m->g = g;
        m->index = i;
        m->evfd = -1;
        g->n = i + 1;
        if (!ctxs[i]) {
            rc = PURE_EINVAL;
            break;
        }
        /* the first socket may take a fresh port (port 0): the others join it */
        rc = pure_loop_open(ctxs[i], i ? port_bind : bind, 1, &m->loop);
        if (rc)
            break;
        if (i == 0 &&
            pure_addr_to_string(pure_loop_local_addr(m->loop), port_bind, sizeof port_bind)) {
            rc = PURE_EINVAL;
            break;
        }
        if (pthread_mutex_init(&m->mu, NULL)) {
            rc = PURE_ENOMEM;
            break;
        }
        m->mu_ok = 1;
        m->slots = malloc(INBOX_SLOTS * sizeof *m->slots);
        m->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (!m->slots)
            rc = PURE_ENOMEM;
        else if (m->evfd < 0)
            rc = PURE_EIO;
        else
            rc = pure_loop_watch_fd(m->loop, m->evfd, drain_inbox, m);
    }
    if (!rc) {
        struct sock_filter prog[PURE_STEER_PROG_MAX];
        struct sock_fprog fp = {.len = (unsigned short)pure_steer_program(prog, n), .filter = prog};
        if (setsockopt(pure_loop_udp(g->m[0].loop)->fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp,
                       sizeof fp) != 0)
            rc = PURE_EIO;
    }
    if (!rc)
        rc = check_order(g);
    if (rc) {
        int e = errno;
        pure_loop_group_free(g);
        errno = e;
        return rc;
    }
    for (unsigned i = 0; i < n; i++) { /* steering is on: now each loop hands off */
        pure_udp *u = pure_loop_udp(g->m[i].loop);
        u->handoff = handoff;
        u->handoff_arg = &g->m[i];
    }
    *out = g;
    return 0;
}

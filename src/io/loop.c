/* SPDX-License-Identifier: MIT */
/* loop.c: the I/O loop: one epoll set holding the UDP socket, an eventfd for pure_loop_stop
 * and the application's descriptors; each wakeup reads a batch, runs due timers, then sends
 * every burst the core has, and sleeps until the core's next deadline. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sendmmsg, recvmmsg, epoll_pwait2 */
#endif
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "udp.h"

#define MAX_FDS 8
/* recvmsg calls per wakeup before the loop sends: 16 GRO buffers are up to ~700 datagrams,
 * enough to batch the ACKs without holding them long. */
#define READ_BUDGET 16
/* While a burst waits for the socket to drain, the core's deadline stays "now" (it has
 * something queued); sleep at least this long then, so the loop waits for EPOLLOUT instead of
 * spinning. Due timers still run on every wakeup. */
#define BLOCKED_WAIT_NS 1000000u

typedef struct watch {
    int fd;
    pure_loop_fd_cb cb;
    void *user;
} watch;

struct pure_loop {
    pure_ctx *ctx;
    pure_udp udp;
    pure_addr local;
    int ep;
    int evfd;
    atomic_int stop;
    int pwait2; /* epoll_pwait2 works (ns timeouts); else ms, rounded up */
    /* the burst being sent: held across EAGAIN until EPOLLOUT */
    uint8_t *sbuf;
    size_t held_len, held_seg, held_off;
    pure_addr held_to;
    int blocked;
    watch fds[MAX_FDS];
    int nfds;
    pure_loop_stats st;
    pure_loop_steer_stats steer; /* in a group (group.c) */
};

void pure_loop_stats_get(const pure_loop *loop, pure_loop_stats *st)
{
    *st = loop->st;
}
uint16_t pure_loop_port(const pure_loop *loop)
{
    /* sin_port and sin6_port sit at the same offset, in network order */
    return (uint16_t)(loop->local.bytes[2] << 8 | loop->local.bytes[3]);
}
const pure_addr *pure_loop_local_addr(const pure_loop *loop)
{
    return &loop->local;
}
pure_udp *pure_loop_udp(pure_loop *loop)
{
    return &loop->udp;
}
pure_ctx *pure_loop_ctx(pure_loop *loop)
{
    return loop->ctx;
}
pure_loop_steer_stats *pure_loop_steer(pure_loop *loop)
{
    return &loop->steer;
}

void pure_loop_steer_stats_get(const pure_loop *loop, pure_loop_steer_stats *st, size_t size)
{
    memset(st, 0, size);
    memcpy(st, &loop->steer, size < sizeof loop->steer ? size : sizeof loop->steer);
}

static void release(pure_loop *loop);
static int flush(pure_loop *l, uint64_t now);
static int wait_events(pure_loop *l, struct epoll_event *ev, int max, uint64_t wait_ns);

static uint64_t loop_clock(void *user)
{
    (void)user;
    return pure_now();
}

int pure_loop_new(pure_ctx *ctx, const char *bind, pure_loop **out)
{
    return pure_loop_open(ctx, bind, 0, out);
}

int pure_loop_open(pure_ctx *ctx, const char *bind, int reuseport, pure_loop **out)
{
    if (!ctx || !bind || !out)
        return PURE_EINVAL;
    pure_loop *l = calloc(1, sizeof *l);
    if (!l)
        return PURE_ENOMEM;
    l->ctx = ctx;
    l->ep = l->evfd = -1;
    l->pwait2 = 1;
    atomic_init(&l->stop, 0);
    int rc = pure_addr_from_string(&l->local, bind);
    if (rc) {
        free(l);
        return rc;
    }
    l->sbuf = malloc(PURE_UDP_BUF);
    if (!l->sbuf) {
        free(l);
        return PURE_ENOMEM;
    }
    rc = pure_udp_open(&l->udp, &l->local, &l->st, reuseport);
    if (rc) {
        int e = errno;
        free(l->sbuf);
        free(l);
        errno = e;
        return rc;
    }
    /* The peer's socket is taken to be like ours: never more in flight than it can hold. */
    pure_ctx_set_max_in_flight(ctx, pure_udp_rcvbuf(&l->udp));
    pure_ctx_set_clock(ctx, loop_clock, NULL); /* the calls a program makes between wakeups */
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = l->udp.fd};
    struct epoll_event ev2 = {.events = EPOLLIN, .data.fd = l->evfd};
    if (l->ep < 0 || l->evfd < 0 || epoll_ctl(l->ep, EPOLL_CTL_ADD, l->udp.fd, &ev) != 0 ||
        epoll_ctl(l->ep, EPOLL_CTL_ADD, l->evfd, &ev2) != 0) {
        int e = errno;
        release(l);
        errno = e;
        return PURE_EIO;
    }
    *out = l;
    return 0;
}

/* Closes and frees what the loop holds. */
static void release(pure_loop *loop)
{
    pure_udp_close(&loop->udp);
    if (loop->ep >= 0)
        close(loop->ep);
    if (loop->evfd >= 0)
        close(loop->evfd);
    free(loop->sbuf);
    free(loop);
}

/* Before the socket goes: the CLOSEs the core has queued (pure_link_abort, graceful closes ended
 * now) leave, or the peers would wait out their idle timeout. Best effort and bounded: a full
 * socket is given FAREWELL_NS to drain. */
#define FAREWELL_NS 20000000u
static void farewell(pure_loop *l)
{
    uint64_t until = pure_now() + FAREWELL_NS;
    pure_ctx_shutdown(l->ctx, PURE_SHUTDOWN_CLOSES, pure_now());
    for (;;) {
        if (flush(l, pure_now()) != 0 || !l->blocked)
            return;
        uint64_t now = pure_now();
        if (now >= until)
            return;
        struct epoll_event ev;
        if (wait_events(l, &ev, 1, until - now) < 0 && errno != EINTR)
            return;
    }
}

void pure_loop_free(pure_loop *loop)
{
    if (!loop)
        return;
    farewell(loop);
    release(loop);
}

void pure_loop_stop(pure_loop *loop)
{
    atomic_store(&loop->stop, 1);
    uint64_t one = 1;
    ssize_t r = write(loop->evfd, &one, sizeof one); /* a full counter still wakes epoll */
    (void)r;
}

int pure_loop_set_gso(pure_loop *loop, int on)
{
    if (!loop)
        return PURE_EINVAL;
    loop->udp.gso = !!on;
    loop->udp.gso_confirmed = 0;
    loop->st.gso = !!on;
    return 0;
}

int pure_loop_set_gro(pure_loop *loop, int on)
{
    if (!loop)
        return PURE_EINVAL;
    pure_udp_set_gro(&loop->udp, on);
    return 0;
}

int pure_loop_watch_fd(pure_loop *loop, int fd, pure_loop_fd_cb cb, void *user)
{
    if (!loop || fd < 0 || !cb || fd == loop->udp.fd || fd == loop->evfd)
        return PURE_EINVAL;
    for (int i = 0; i < loop->nfds; i++)
        if (loop->fds[i].fd == fd)
            return PURE_EINVAL;
    if (loop->nfds == MAX_FDS)
        return PURE_ELIMIT;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(loop->ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        return PURE_EIO;
    loop->fds[loop->nfds++] = (watch){fd, cb, user};
    return 0;
}

int pure_loop_unwatch_fd(pure_loop *loop, int fd)
{
    if (!loop)
        return PURE_EINVAL;
    for (int i = 0; i < loop->nfds; i++)
        if (loop->fds[i].fd == fd) {
            (void)epoll_ctl(loop->ep, EPOLL_CTL_DEL, fd, NULL);
            loop->fds[i] = loop->fds[--loop->nfds];
            return 0;
        }
    return PURE_EINVAL;
}

static int want_out(pure_loop *l, int on)
{
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.fd = l->udp.fd};
    return epoll_ctl(l->ep, EPOLL_CTL_MOD, l->udp.fd, &ev) == 0 ? 0 : PURE_EIO;
}

/* Sends the held burst, then everything pure_ctx_write has. A full socket keeps the burst (the
 * core already counts it as sent) and arms EPOLLOUT: nothing is dropped and nothing spins. */
static int flush(pure_loop *l, uint64_t now)
{
    int bursts = 0;
    for (;;) {
        if (!l->blocked) {
            if (bursts++)
                now = pure_now(); /* the last burst took time: the pacer has refilled since */
            int64_t n =
                pure_ctx_write(l->ctx, l->sbuf, PURE_UDP_BUF, &l->held_seg, &l->held_to, now);
            if (n <= 0)
                return 0;
            l->held_len = (size_t)n;
            l->held_off = 0;
        }
        l->udp.too_big = 0;
        l->udp.unreach = 0;
        int rc =
            pure_udp_send(&l->udp, l->sbuf, l->held_len, l->held_seg, &l->held_to, &l->held_off);
        if (l->udp.too_big) /* the path's MTU is smaller than our datagrams: shrink and resend */
            pure_ctx_burst_too_big(l->ctx, now);
        if (l->udp.unreach) /* this host cannot send there: a handshake to it fails now */
            pure_ctx_unreachable(l->ctx, &l->held_to, l->udp.unreach, NULL, 0, now);
        if (rc == PURE_EAGAIN) {
            if (!l->blocked) {
                l->blocked = 1;
                return want_out(l, 1);
            }
            return 0;
        }
        if (rc < 0)
            return rc;
        if (l->blocked) {
            l->blocked = 0;
            if (want_out(l, 0))
                return PURE_EIO;
        }
    }
}

static int wait_events(pure_loop *l, struct epoll_event *ev, int max, uint64_t wait_ns)
{
    if (l->pwait2) {
        struct timespec ts = {.tv_sec = (time_t)(wait_ns / 1000000000u),
                              .tv_nsec = (long)(wait_ns % 1000000000u)};
        int n = epoll_pwait2(l->ep, ev, max, wait_ns == UINT64_MAX ? NULL : &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        l->pwait2 = 0; /* kernel before 5.11: millisecond timeouts */
    }
    int ms;
    if (wait_ns == UINT64_MAX)
        ms = -1;
    else if (wait_ns >= (uint64_t)INT32_MAX * 1000000u)
        ms = INT32_MAX;
    else
        ms = (int)((wait_ns + 999999u) / 1000000u); /* round up: never wake before the timer */
    return epoll_wait(l->ep, ev, max, ms);
}

int pure_loop_run(pure_loop *l, uint64_t timeout_ns)
{
    if (!l)
        return PURE_EINVAL;
    uint64_t start = pure_now();
    uint64_t end = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
    int rc = flush(l, start);
    if (rc)
        return rc;
    struct epoll_event ev[MAX_FDS + 2];
    for (;;) {
        if (atomic_exchange(&l->stop, 0))
            return 0;
        uint64_t now = pure_now();
        uint64_t wake = pure_ctx_deadline(l->ctx);
        if (l->blocked && wake < now + BLOCKED_WAIT_NS)
            wake = now + BLOCKED_WAIT_NS;
        if (wake > end)
            wake = end;
        uint64_t wait_ns = wake == UINT64_MAX ? UINT64_MAX : wake > now ? wake - now : 0;
        int n = wait_events(l, ev, MAX_FDS + 2, wait_ns);
        if (n < 0) {
            if (errno != EINTR)
                return PURE_EIO;
            n = 0;
        }
        l->st.wakeups++;
        if (n == 0)
            l->st.timer_wakeups++;
        int backlog = 0; /* the read budget ran out: the socket holds more */
        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd;
            if (fd == l->udp.fd) {
                if (ev[i].events & EPOLLOUT)
                    rc = flush(l, pure_now()); /* the held burst first */
                if (ev[i].events & EPOLLERR)   /* ICMP errors queued (IP_RECVERR) */
                    pure_udp_errors(&l->udp, l->ctx);
                if (!rc && (ev[i].events & EPOLLIN)) {
                    int r = pure_udp_recv(&l->udp, l->ctx, READ_BUDGET);
                    rc = r < 0 ? PURE_EIO : 0;
                    backlog = r > 0;
                }
                if (rc)
                    return rc;
            } else if (fd == l->evfd) {
                uint64_t v;
                ssize_t r = read(l->evfd, &v, sizeof v);
                (void)r;
            } else {
                for (int j = 0; j < l->nfds; j++)
                    if (l->fds[j].fd == fd) {
                        l->fds[j].cb(l, fd, l->fds[j].user);
                        break; /* the handler may have unwatched it */
                    }
            }
        }
        /* all reads of this wakeup are in: now timers (a probe timeout past what was read waits
         * while the socket holds more), then one round of writes */
        pure_ctx_read_backlog(l->ctx, backlog);
        now = pure_now();
        if (pure_ctx_deadline(l->ctx) <= now) {
            pure_ctx_timeout(l->ctx, now);
            l->st.timeouts++;
        }
        rc = flush(l, now);
        if (rc)
            return rc;
        if (now >= end)
            return 0;
    }
}

/* SPDX-License-Identifier: MIT */
/* udp.c: the I/O loop's UDP socket on Linux: GSO bursts out, GRO batches in, with
 * sendmmsg/recvmmsg fallbacks, and IPv4 peers kept as sockaddr_in even on an IPv6 socket. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sendmmsg, recvmmsg, epoll_pwait2 */
#endif
#include <errno.h>
#include <time.h> /* before linux/errqueue.h, which uses struct timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "udp.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

/* 64 MiB: one socket serves every link of a context, and 1,000 links x 16 requests of 1 KiB
 * in flight overflowed 4 MiB (issue #14). Memory is charged only while datagrams wait. */
#define SOCKBUF (64 << 20)
/* The kernel refuses a GSO send above 64 KiB of IP packet; keep every burst below it. */
#define GSO_MAX_BYTES 65000

static void set_buffer(int fd, int force_opt, int opt)
{
    int v = SOCKBUF;
    /* SO_*BUFFORCE passes the rmem_max/wmem_max caps but needs CAP_NET_ADMIN; the plain
     * option is capped by the system's maximum, which is the best an unprivileged user gets. */
    if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof v) != 0)
        (void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v);
}

uint64_t pure_udp_rcvbuf(const pure_udp *u)
{
    int v = 0;
    socklen_t len = sizeof v;
    if (getsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &v, &len) != 0 || v <= 0)
        return 0;
    return (uint64_t)v / 2;
}

int pure_udp_set_gro(pure_udp *u, int on)
{
    int v = on ? 1 : 0;
    if (setsockopt(u->fd, SOL_UDP, UDP_GRO, &v, sizeof v) == 0)
        u->gro = v;
    else
        u->gro = 0;
    if (u->st)
        u->st->gro = u->gro;
    return u->gro;
}

int pure_udp_open(pure_udp *u, pure_addr *local, pure_loop_stats *st, int reuseport)
{
    memset(u, 0, sizeof *u);
    u->fd = -1;
    u->st = st;
    u->rbuf = malloc((size_t)PURE_UDP_GRO_SLOTS * PURE_UDP_BUF);
    u->mm = calloc(PURE_UDP_BATCH, sizeof *u->mm);
    u->iov = calloc(PURE_UDP_BATCH, sizeof *u->iov);
    u->names = calloc(PURE_UDP_BATCH, sizeof *u->names);
    if (!u->rbuf || !u->mm || !u->iov || !u->names) {
        pure_udp_close(u);
        return PURE_ENOMEM;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    memcpy(&ss, local->bytes, local->len);
    u->family = ss.ss_family;
    u->fd = socket(u->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (u->fd < 0)
        goto fail;
    int one = 1;
    if (u->family == AF_INET6) {
        /* A wildcard IPv6 socket also serves IPv4 peers, whatever the system default. */
        int off = 0;
        (void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        (void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof one);
    }
    /* ICMP errors (port or host unreachable) queued with the address and the datagram they
     * quote, for pure_udp_errors: an unconnected socket hears of them no other way. Both levels
     * on an IPv6 socket, which also carries IPv4. Without them, only timeouts tell. */
    (void)setsockopt(u->fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
    /* Don't fragment, and don't limit datagrams by the kernel's cached path MTU either: the core
     * finds the path's size itself (its probes must be dropped, not fragmented, when too large;
     * RFC 8899). A Packet Too Big still reaches the error queue, as a hint for the core. Without
     * this an IPv6 socket fragments locally to the MTU an ICMPv6 Packet Too Big taught the
     * kernel, and IPv4 sends with DF but cuts GSO bursts. Both levels on an IPv6 socket. */
    int probe = IP_PMTUDISC_PROBE;
    (void)setsockopt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof probe);
    if (u->family == AF_INET6) {
        int probe6 = IPV6_PMTUDISC_PROBE;
        (void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &probe6, sizeof probe6);
        (void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_DONTFRAG, &one, sizeof one);
    }
    /* ECN (RFC 3168): every datagram leaves ECT(0), so an ECN-capable AQM on the path may mark
     * it CE instead of dropping it; each datagram's ECN bits come back with it (IP_RECVTOS,
     * IPV6_RECVTCLASS) for pure_ctx_read_ecn. A UDP socket's TOS is sent as set (only TCP's
     * ECN bits are the kernel's). Both levels on an IPv6 socket, which also carries IPv4. */
    int ect0 = 2;
    (void)setsockopt(u->fd, IPPROTO_IP, IP_TOS, &ect0, sizeof ect0);
    (void)setsockopt(u->fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    if (u->family == AF_INET6) {
        (void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_TCLASS, &ect0, sizeof ect0);
        (void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
    }
    /* The kernel's receive time of each datagram (SO_TIMESTAMPNS), for pure_ctx_read_at: when the
     * loop is busy a datagram may wait milliseconds in the socket queue, and that wait is this
     * host's, not the path's. */
    (void)setsockopt(u->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (reuseport && setsockopt(u->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        goto fail;
    set_buffer(u->fd, SO_RCVBUFFORCE, SO_RCVBUF);
    set_buffer(u->fd, SO_SNDBUFFORCE, SO_SNDBUF);
    if (bind(u->fd, (struct sockaddr *)&ss, (socklen_t)local->len) != 0)
        goto fail;
    socklen_t sl = sizeof ss;
    if (getsockname(u->fd, (struct sockaddr *)&ss, &sl) != 0 || sl > sizeof local->bytes)
        goto fail;
    memset(local, 0, sizeof *local);
    memcpy(local->bytes, &ss, sl);
    local->len = sl;
    u->gso = 1; /* tried on the first burst; the kernel's answer decides */
    if (st)
        st->gso = 1;
    pure_udp_set_gro(u, 1);
    return 0;
fail:;
    int e = errno;
    pure_udp_close(u);
    errno = e;
    return PURE_EIO;
}

void pure_udp_close(pure_udp *u)
{
    if (u->fd >= 0)
        close(u->fd);
    u->fd = -1;
    free(u->rbuf);
    free(u->mm);
    free(u->iov);
    free(u->names);
    u->rbuf = NULL;
    u->mm = NULL;
    u->iov = NULL;
    u->names = NULL;
}

/* The destination as this socket needs it: an IPv4 peer becomes ::ffff:a.b.c.d on an IPv6
 * socket. Returns its length, or 0 if the address cannot be used on this socket. */
static socklen_t dest(const pure_udp *u, const pure_addr *to, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (to->len == sizeof(struct sockaddr_in)) {
        struct sockaddr_in s4;
        memcpy(&s4, to->bytes, sizeof s4);
        if (s4.sin_family != AF_INET)
            return 0;
        if (u->family == AF_INET) {
            memcpy(ss, &s4, sizeof s4);
            return sizeof s4;
        }
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = s4.sin_port;
        s6->sin6_addr.s6_addr[10] = 0xff;
        s6->sin6_addr.s6_addr[11] = 0xff;
        memcpy(&s6->sin6_addr.s6_addr[12], &s4.sin_addr, 4);
        return sizeof *s6;
    }
    if (to->len == sizeof(struct sockaddr_in6) && u->family == AF_INET6) {
        memcpy(ss, to->bytes, to->len);
        return ss->ss_family == AF_INET6 ? (socklen_t)to->len : 0;
    }
    return 0;
}

/* The source as the core sees it: a v4-mapped IPv6 source becomes a sockaddr_in, so a peer has
 * one address whichever socket family carried it. */
static void source(const struct sockaddr_storage *ss, socklen_t len, pure_addr *from)
{
    memset(from, 0, sizeof *from);
    if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            struct sockaddr_in s4;
            memset(&s4, 0, sizeof s4);
            s4.sin_family = AF_INET;
            s4.sin_port = s6->sin6_port;
            memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
            memcpy(from->bytes, &s4, sizeof s4);
            from->len = sizeof s4;
            return;
        }
    }
    if (len > sizeof from->bytes)
        len = sizeof from->bytes;
    memcpy(from->bytes, ss, len);
    from->len = len;
}

/* Errors that mean the socket itself is unusable, as opposed to one datagram's fate. */
static int socket_broken(int e)
{
    return e == EBADF || e == ENOTSOCK || e == EFAULT;
}

/* A send this host refused because it cannot reach the address: kept for the loop, which tells
 * the core (pure_ctx_unreachable). */
static void note_unreach(pure_udp *u, int e)
{
    if (e == ENETUNREACH || e == EHOSTUNREACH)
        u->unreach = PURE_UNREACH_LOCAL;
    else if (e == EAFNOSUPPORT)
        u->unreach = PURE_UNREACH_FAMILY;
}

/* Sending retries once on EMSGSIZE: a router's Fragmentation Needed or Packet Too Big for an
 * earlier datagram (a path MTU probe) leaves its error pending on the socket (IP_RECVERR sets
 * sk_err), and the next send returns it, once, sending nothing. Its details wait in the error
 * queue (pure_udp_errors). A datagram this host really cannot send fails again. */
static int send_gso(pure_udp *u, const uint8_t *buf, size_t len, size_t seg,
                    const struct sockaddr_storage *ss, socklen_t sl)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_name = (void *)ss;
    m.msg_namelen = sl;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (len > seg) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t gso = (uint16_t)seg;
        memcpy(CMSG_DATA(c), &gso, sizeof gso);
    }
    ssize_t r;
    int tries = 0;
    do
        r = sendmsg(u->fd, &m, 0);
    while (r < 0 && (errno == EINTR || (errno == EMSGSIZE && tries++ == 0)));
    return r < 0 ? -errno : 0;
}

int pure_udp_send(pure_udp *u, const uint8_t *buf, size_t n, size_t seg, const pure_addr *to,
                  size_t *off)
{
    struct sockaddr_storage ss;
    socklen_t sl = dest(u, to, &ss);
    if (sl == 0 || seg == 0) {
        u->st->send_errors++;
        if (sl == 0)
            u->unreach = PURE_UNREACH_FAMILY; /* an IPv6 peer from an IPv4 socket */
        *off = n;
        return 0;
    }
    while (*off < n) {
        size_t left = n - *off;
        if (u->gso || left <= seg) {
            size_t max = seg * PURE_UDP_BATCH;
            while (max > seg && max > GSO_MAX_BYTES)
                max -= seg;
            size_t len = left < max ? left : max;
            size_t pkts = (len + seg - 1) / seg;
            int e = send_gso(u, buf + *off, len, seg, &ss, sl);
            if (e == -EAGAIN || e == -EWOULDBLOCK) {
                u->st->send_blocked++;
                return PURE_EAGAIN;
            }
            if (e && pkts > 1 && !u->gso_confirmed &&
                (e == -EIO || e == -EINVAL || e == -ENOPROTOOPT || e == -EOPNOTSUPP)) {
                /* No GSO here (an old kernel, a device without checksum offload): split from
                 * now on. */
                u->gso = 0;
                u->st->gso = 0;
                continue;
            }
            if (e) {
                if (socket_broken(-e)) {
                    errno = -e;
                    return PURE_EIO;
                }
                /* unreachable, too big, a full device queue (ENOBUFS, which EPOLLOUT would not
                 * wait out): dropped like a lost packet, and retransmitted by the core; "too big"
                 * is reported so the core can shrink its datagrams */
                u->st->send_errors++;
                if (e == -EMSGSIZE)
                    u->too_big = 1;
                note_unreach(u, -e);
            } else {
                if (pkts > 1) {
                    u->gso_confirmed = 1;
                    u->st->gso_bursts++;
                }
                u->st->sendmsg_calls++;
                u->st->packets_sent += pkts;
            }
            *off += len;
            continue;
        }
        /* sendmmsg: one message per datagram, up to a batch per call */
        unsigned cnt = 0;
        for (size_t o = *off; o < n && cnt < PURE_UDP_BATCH; o += seg, cnt++) {
            size_t l = n - o < seg ? n - o : seg;
            u->iov[cnt].iov_base = (void *)(buf + o);
            u->iov[cnt].iov_len = l;
            memset(&u->mm[cnt], 0, sizeof u->mm[cnt]);
            u->mm[cnt].msg_hdr.msg_name = &ss;
            u->mm[cnt].msg_hdr.msg_namelen = sl;
            u->mm[cnt].msg_hdr.msg_iov = &u->iov[cnt];
            u->mm[cnt].msg_hdr.msg_iovlen = 1;
        }
        int r, tries = 0;
        do
            r = sendmmsg(u->fd, u->mm, cnt, 0);
        while (r < 0 && (errno == EINTR || (errno == EMSGSIZE && tries++ == 0)));
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                u->st->send_blocked++;
                return PURE_EAGAIN;
            }
            if (socket_broken(errno))
                return PURE_EIO;
            /* the first datagram was refused: drop it, try the rest */
            u->st->send_errors++;
            if (errno == EMSGSIZE)
                u->too_big = 1;
            note_unreach(u, errno);
            r = 1;
        } else {
            u->st->sendmsg_calls++;
            u->st->packets_sent += (uint64_t)r;
        }
        size_t adv = (size_t)r * seg;
        *off = adv >= n - *off ? n : *off + adv;
    }
    return 0;
}

static void deliver(pure_udp *u, pure_ctx *ctx, uint8_t *d, size_t len, size_t seg,
                    const pure_addr *from, unsigned ecn, uint64_t arrived, uint64_t now)
{
    if (seg == 0 || seg > len)
        seg = len;
    size_t pkts = 0;
    for (size_t o = 0; o < len; o += seg, pkts++) {
        size_t l = len - o < seg ? len - o : seg;
        /* In a group, the kernel steered this buffer by its first datagram: a GRO or GSO train
         * of several links' packets may hold some another loop owns. */
        if (u->handoff && u->handoff(u->handoff_arg, d + o, l, from))
            continue;
        (void)pure_ctx_read_at(ctx, from, d + o, l, ecn, arrived, now); /* junk: counted */
    }
    if (len == 0) { /* an empty datagram is still one (the core drops it as malformed) */
        (void)pure_ctx_read_at(ctx, from, d, 0, ecn, arrived, now);
        pkts = 1;
    }
    u->st->datagrams_received += pkts;
    if (pkts > 1) {
        u->st->gro_buffers++;
        u->st->gro_segments += pkts;
    }
}

/* The two clocks of one read: the loop's (monotonic) and the kernel's receive timestamps'
 * (CLOCK_REALTIME), read together after the recvmmsg. */
struct rx_clock {
    uint64_t now, real;
};

static struct rx_clock rx_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (struct rx_clock){pure_now(), (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec};
}

/* A receive timestamp on the loop's clock: now less how long ago it was on the real-time clock.
 * None, or one from the future (the real-time clock stepped), is now. */
static uint64_t rx_arrival(const struct rx_clock *k, const struct timespec *ts)
{
    if (ts->tv_sec < 0)
        return k->now;
    uint64_t t = (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
    if (t >= k->real)
        return k->now;
    uint64_t ago = k->real - t;
    return ago < k->now ? k->now - ago : k->now;
}

/* What a received message's control data says: the GRO segment size (0: none), the ECN bits
 * of its IP header (all datagrams of a GRO train share them: the kernel merges only datagrams
 * whose headers agree) and its arrival time (the first datagram's, for a train). */
static void read_cmsgs(struct msghdr *m, const struct rx_clock *k, size_t *seg, unsigned *ecn,
                       uint64_t *arrived)
{
    *seg = 0;
    *ecn = 0;
    *arrived = k->now;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *arrived = rx_arrival(k, &ts);
        } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int g;
            memcpy(&g, CMSG_DATA(c), sizeof g);
            if (g > 0)
                *seg = (size_t)g;
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS &&
                   c->cmsg_len >= CMSG_LEN(1)) {
            *ecn = *CMSG_DATA(c) & 3;
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS &&
                   c->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int tc;
            memcpy(&tc, CMSG_DATA(c), sizeof tc);
            *ecn = (unsigned)tc & 3;
        }
    }
}

/* One recvmmsg into n slots of `size` bytes of rbuf (control buffers, if any, set by the caller
 * in mm[i].msg_hdr before): the number of messages, or -errno (EAGAIN counted as an empty read). */
static int recv_slots(pure_udp *u, unsigned n, size_t size)
{
    for (unsigned i = 0; i < n; i++) {
        u->iov[i].iov_base = u->rbuf + (size_t)i * size;
        u->iov[i].iov_len = size;
        struct msghdr *m = &u->mm[i].msg_hdr;
        m->msg_name = &u->names[i];
        m->msg_namelen = sizeof u->names[i];
        m->msg_iov = &u->iov[i];
        m->msg_iovlen = 1;
        m->msg_flags = 0;
        u->mm[i].msg_len = 0;
    }
    int r = recvmmsg(u->fd, u->mm, n, 0, NULL);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            u->st->recv_empty++;
        return -errno;
    }
    u->st->recvmsg_calls++;
    return r;
}

/* One recvmmsg of up to PURE_UDP_GRO_SLOTS buffers, each a datagram or a GRO train of
 * equal-sized ones (UDP_GRO gives the segment size). Fewer than all slots filled means the queue
 * was empty: -EAGAIN, so the loop goes back to epoll instead of asking again for nothing (one
 * system call less per wakeup for a lone datagram, e.g. each turn of a ping-pong). */
static int recv_gro(pure_udp *u, pure_ctx *ctx)
{
    union {
        char buf[2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec)) + 64];
        struct cmsghdr align;
    } ctl[PURE_UDP_GRO_SLOTS];
    for (unsigned i = 0; i < PURE_UDP_GRO_SLOTS; i++) {
        u->mm[i].msg_hdr.msg_control = ctl[i].buf;
        u->mm[i].msg_hdr.msg_controllen = sizeof ctl[i].buf;
    }
    int r = recv_slots(u, PURE_UDP_GRO_SLOTS, PURE_UDP_BUF);
    if (r < 0)
        return r;
    struct rx_clock k = rx_clock_now();
    for (int i = 0; i < r; i++) {
        struct msghdr *m = &u->mm[i].msg_hdr;
        if (m->msg_flags & MSG_TRUNC) {
            u->st->recv_errors++;
            continue;
        }
        size_t seg;
        unsigned ecn;
        uint64_t arrived;
        read_cmsgs(m, &k, &seg, &ecn, &arrived);
        pure_addr from;
        source(&u->names[i], m->msg_namelen, &from);
        deliver(u, ctx, u->iov[i].iov_base, u->mm[i].msg_len, seg, &from, ecn, arrived, k.now);
    }
    return r == PURE_UDP_GRO_SLOTS ? 0 : -EAGAIN;
}

static int recv_batch(pure_udp *u, pure_ctx *ctx)
{
    const unsigned slots = PURE_UDP_BUF / PURE_UDP_SLOT;
    union {
        char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec)) + 16]; /* the
                                                 TOS / traffic class, the receive time */
        struct cmsghdr align;
    } ctl[PURE_UDP_BUF / PURE_UDP_SLOT];
    for (unsigned i = 0; i < slots; i++) {
        u->mm[i].msg_hdr.msg_control = ctl[i].buf;
        u->mm[i].msg_hdr.msg_controllen = sizeof ctl[i].buf;
    }
    int r = recv_slots(u, slots, PURE_UDP_SLOT);
    if (r < 0)
        return r;
    struct rx_clock k = rx_clock_now();
    for (int i = 0; i < r; i++) {
        if (u->mm[i].msg_hdr.msg_flags & MSG_TRUNC) {
            u->st->recv_errors++;
            continue;
        }
        size_t seg;
        unsigned ecn;
        uint64_t arrived;
        read_cmsgs(&u->mm[i].msg_hdr, &k, &seg, &ecn, &arrived);
        pure_addr from;
        source(&u->names[i], u->mm[i].msg_hdr.msg_namelen, &from);
        deliver(u, ctx, u->iov[i].iov_base, u->mm[i].msg_len, 0, &from, ecn, arrived, k.now);
    }
    return (unsigned)r == slots ? 0 : -EAGAIN; /* a short batch means the queue is empty */
}

/* A Packet Too Big from a router (ICMP "fragmentation needed", ICMPv6 Packet Too Big): the UDP
 * payload the path carries, the MTU it gives (ee_info) less the IP and UDP headers; 0 if the
 * error is something else. (This host's own refusal, SO_EE_ORIGIN_LOCAL, sendmsg reports.) */
static uint32_t ptb_payload(const struct sock_extended_err *ee)
{
    if (ee->ee_errno != EMSGSIZE)
        return 0;
    if (ee->ee_origin == SO_EE_ORIGIN_ICMP && ee->ee_type == 3 && ee->ee_code == 4)
        return ee->ee_info > 28 ? ee->ee_info - 28 : 0;
    if (ee->ee_origin == SO_EE_ORIGIN_ICMP6 && ee->ee_type == 2)
        return ee->ee_info > 48 ? ee->ee_info - 48 : 0;
    return 0;
}

/* What an ICMP or ICMPv6 destination unreachable error means, as a PURE_UNREACH_* kind (0: an
 * error the core has no use for here: a Packet Too Big is ptb_payload's). */
static int unreach_kind(const struct sock_extended_err *ee)
{
    if (ee->ee_origin == SO_EE_ORIGIN_ICMP && ee->ee_type == 3) /* ICMP_DEST_UNREACH */
        switch (ee->ee_code) {
        case 3: return PURE_UNREACH_PORT;
        case 0:                           /* net */
        case 1:                           /* host */
        case 6:                           /* net unknown */
        case 7: return PURE_UNREACH_HOST; /* host unknown */
        case 9:
        case 10:
        case 13: return PURE_UNREACH_ADMIN; /* prohibited: net, host, by filtering */
        default: return 0;
        }
    if (ee->ee_origin == SO_EE_ORIGIN_ICMP6 && ee->ee_type == 1) /* ICMP6_DST_UNREACH */
        switch (ee->ee_code) {
        case 4: return PURE_UNREACH_PORT;
        case 0:                            /* no route */
        case 3: return PURE_UNREACH_HOST;  /* address unreachable */
        case 1:                            /* administratively prohibited */
        case 5:                            /* source address failed policy */
        case 6: return PURE_UNREACH_ADMIN; /* reject route */
        default: return 0;
        }
    return 0;
}

int pure_udp_errors(pure_udp *u, pure_ctx *ctx)
{
    int n = 0;
    /* bounded: EPOLLERR stays up while more are queued, and the loop comes back */
    for (int i = 0; i < PURE_UDP_BATCH; i++) {
        union {
            char buf[512];
            struct cmsghdr align;
        } ctl;
        struct sockaddr_storage ss;
        struct iovec iov = {.iov_base = u->rbuf, .iov_len = PURE_UDP_SLOT};
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_name = &ss;
        m.msg_namelen = sizeof ss;
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        ssize_t r = recvmsg(u->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return n; /* EAGAIN: the queue is empty */
        }
        int kind = 0;
        uint32_t ptb = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
                (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                struct sock_extended_err ee;
                memcpy(&ee, CMSG_DATA(c), sizeof ee);
                kind = unreach_kind(&ee);
                ptb = ptb_payload(&ee);
            }
        u->st->recv_errors++;
        n++;
        if ((!kind && !ptb) || m.msg_namelen == 0)
            continue;
        /* msg_name is where the quoted datagram went (the peer), the payload its start */
        pure_addr to;
        source(&ss, m.msg_namelen, &to);
        if (ptb)
            (void)pure_ctx_packet_too_big(ctx, &to, ptb, u->rbuf, (size_t)r, pure_now());
        else
            (void)pure_ctx_unreachable(ctx, &to, kind, u->rbuf, (size_t)r, pure_now());
    }
    return n;
}

int pure_udp_recv(pure_udp *u, pure_ctx *ctx, int budget)
{
    for (int i = 0; i < budget; i++) {
        int e = u->gro ? recv_gro(u, ctx) : recv_batch(u, ctx);
        if (e == 0 || e == -EINTR)
            continue;
        if (e == -EAGAIN || e == -EWOULDBLOCK)
            return 0;
        if (socket_broken(-e)) {
            errno = -e;
            return PURE_EIO;
        }
        /* An ICMP error reported on the socket (ECONNREFUSED, ...): its details wait in the
         * error queue. Any other error is counted here. */
        if (pure_udp_errors(u, ctx) == 0)
            u->st->recv_errors++;
    }
    return 1;
}

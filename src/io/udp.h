/* SPDX-License-Identifier: MIT */
/* udp.h: the I/O loop's UDP socket (Linux): opening and tuning it, sending one burst of
 * equal-sized datagrams (one UDP_SEGMENT sendmsg, or sendmmsg without GSO) and receiving a
 * batch of datagrams (recvmsg with UDP_GRO, or recvmmsg without GRO) into pure_ctx_read. */
#ifndef PURE_IO_UDP_H
#define PURE_IO_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "pure_loop.h"

#define PURE_UDP_BUF 65536 /* one GRO receive, one GSO burst */
#define PURE_UDP_BATCH 64  /* datagrams per sendmmsg/recvmmsg (UDP_MAX_SEGMENTS too) */
#define PURE_UDP_SLOT 4096 /* recvmmsg slot without GRO: larger datagrams are dropped */
/* GRO buffers per recvmmsg: fewer filled means the queue is empty, so a lone datagram costs no
 * second, empty read. */
#define PURE_UDP_GRO_SLOTS 4

typedef struct pure_udp {
    int fd;
    int family;        /* AF_INET or AF_INET6 */
    int gso;           /* GSO sends in use (cleared when the kernel refuses) */
    int gso_confirmed; /* a GSO send has succeeded: later EINVAL is not "no GSO" */
    int gro;           /* UDP_GRO is set on the socket */
    int too_big;       /* the last send met EMSGSIZE: datagrams larger than the path */
    int unreach;       /* the last send was refused as unreachable: a PURE_UNREACH_* kind */
    pure_loop_stats *st;
    uint8_t *rbuf;      /* PURE_UDP_GRO_SLOTS * PURE_UDP_BUF bytes */
    struct mmsghdr *mm; /* PURE_UDP_BATCH entries, for sendmmsg and recvmmsg */
    struct iovec *iov;
    struct sockaddr_storage *names;
    /* In a loop group (group.c): takes a datagram another loop of the group owns, before
     * pure_ctx_read would see it; returns 1 if it took it. NULL outside a group. */
    int (*handoff)(void *arg, const uint8_t *d, size_t len, const pure_addr *from);
    void *handoff_arg;
} pure_udp;

/* Opens a non-blocking UDP socket bound to `local` (4 MiB buffers, GRO where available) and
 * fills `local` with the bound address; with reuseport, SO_REUSEPORT is set before the bind, so
 * the socket joins (or starts) the port's reuseport group. Returns 0, PURE_ENOMEM, or PURE_EIO
 * (errno set). */
int pure_udp_open(pure_udp *u, pure_addr *local, pure_loop_stats *st, int reuseport);

void pure_udp_close(pure_udp *u);

/* Turns GRO on or off on the socket; returns 1 if it is now on. */
int pure_udp_set_gro(pure_udp *u, int on);
/* The receive buffer the kernel granted the socket, in bytes as asked for (SO_RCVBUF reports
 * twice that, its allowance for bookkeeping); 0 if it cannot say. */
uint64_t pure_udp_rcvbuf(const pure_udp *u);

/* Sends the datagrams of buf[*off .. n) (seg bytes each, the last possibly shorter) to `to`,
 * advancing *off past what the kernel took. Returns 0 when nothing is left to send (datagrams
 * the network refused are counted in send_errors and dropped: the core retransmits; too_big and
 * unreach say why, for the core),
 * PURE_EAGAIN when the socket buffer is full (wait for EPOLLOUT, call again), or PURE_EIO when
 * the socket itself is broken (errno set). */
int pure_udp_send(pure_udp *u, const uint8_t *buf, size_t n, size_t seg, const pure_addr *to,
                  size_t *off);

/* Reads the socket's error queue (IP_RECVERR): each ICMP destination unreachable error goes to
 * pure_ctx_unreachable with the address and the datagram it quotes; every error read is counted
 * in recv_errors. Call it when epoll reports EPOLLERR. Returns the number of errors read
 * (0: the queue was empty). */
int pure_udp_errors(pure_udp *u, pure_ctx *ctx);

/* Receives up to `budget` system calls' worth of datagrams, feeding each to pure_ctx_read.
 * Returns 1 if the socket may still hold data (the budget ran out), 0 when it is drained
 * (EAGAIN), or PURE_EIO when the socket is broken (errno set). */
int pure_udp_recv(pure_udp *u, pure_ctx *ctx, int budget);

/* The loop's internals a loop group (group.c) uses. pure_loop_open is pure_loop_new with
 * SO_REUSEPORT when reuseport is set. */
int pure_loop_open(pure_ctx *ctx, const char *bind, int reuseport, pure_loop **out);
pure_udp *pure_loop_udp(pure_loop *loop);
pure_ctx *pure_loop_ctx(pure_loop *loop);
pure_loop_steer_stats *pure_loop_steer(pure_loop *loop);

#endif

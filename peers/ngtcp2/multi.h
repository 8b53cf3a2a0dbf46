/* SPDX-License-Identifier: MIT */
/* multi.h is many QUIC connections (ngtcp2) over ONE UDP socket and one thread: the I/O loop of
 * the rpc mode (rpc.c), which adds the RPC on top through the hooks in `side`.
 *
 * Connections are told apart by connection ID (every CID starts with its connection's index,
 * shared.h), a client's first Initials by the DCID it chose (nq_cidmap). Timers: one min-heap
 * over ngtcp2_conn_get_expiry. A turn (mq_turn) reads one recvmmsg batch (GRO: a datagram may
 * hold many packets), handles due timers, writes every connection the batch touched, and sends
 * what they wrote with one sendmmsg: a message per connection burst, several packets of one
 * connection in one message with UDP_SEGMENT (GSO).
 *
 * Each connection has one bidirectional stream. What it sends lives in a send buffer (sbuf) of
 * fixed 4 KiB chunks that never move, because ngtcp2 keeps pointers into the data until the peer
 * acknowledges it; acked_stream_data_offset returns the chunks to the side's free list, so in
 * steady state nothing is allocated per message. Received stream data goes to the on_data hook
 * and its flow-control credit straight back to the peer (the hook consumes it at once).
 */
#ifndef NGTCP2_PEER_MULTI_H
#define NGTCP2_PEER_MULTI_H

#include "shared.h"

#include <signal.h>
#include <sys/socket.h>

#define MQ_MAX_PAYLOAD 1472 /* 1500-byte MTU path: IPv4 + UDP headers */
#define MQ_TX_MSGS 256      /* messages per sendmmsg */
#define MQ_IDLE_TIMEOUT (300 * NGTCP2_SECONDS)

/* Stream offsets [base, base + n * CHUNK) in n chunks. acked <= sent <= ready <= wpos:
 * acknowledged, handed to ngtcp2, ready to send, written (the RPC server writes an echo as it
 * arrives and makes it ready once the whole request is in, or takes it back). */
typedef struct sbuf {
    uint8_t **ring;
    uint32_t head, n, cap;
    uint64_t base, acked, sent, ready, wpos;
} sbuf;

typedef struct side side;

typedef struct rconn {
    nq_timer tm; /* first member: heap entries are cast back to the connection */
    ngtcp2_conn *conn;
    gnutls_session_t tls;
    ngtcp2_crypto_conn_ref ref;
    side *s;
    uint32_t idx;
    int64_t sid; /* the one bidirectional stream, -1 before it exists */
    uint8_t established, dirty;
    const char *why; /* set by on_data when it fails the connection */
    struct sockaddr_storage remote;
    socklen_t remotelen;
    ngtcp2_cid odcid; /* server: the client's first DCID (nq_cidmap key) */
    sbuf out;
    /* rpc.c's per-connection state: framing, and on the client the sequence numbers */
    uint8_t hdr[4], head[8], echo, echoed;
    uint32_t hdr_have, flen, fhave;
    uint8_t *acc;
    uint64_t next_seq, next_reply, fanin_next;
} rconn;

struct side {
    int server, fd;
    struct sockaddr_storage local, remote;
    socklen_t locallen, remotelen;
    gnutls_certificate_credentials_t cred;
    rconn **conns; /* by index; NULL once ended */
    uint32_t nconns, cap;
    nq_heap heap;
    nq_cidmap od;
    uint32_t *dirty, ndirty, dcap;
    uint8_t **pool; /* free chunks */
    size_t npool, pcap;
    /* what this turn sends: messages of one connection's packets each */
    uint8_t *tx;
    size_t txlen, mstart, mpkts;
    uint32_t nmsgs;
    struct mmsghdr msgs[MQ_TX_MSGS];
    struct iovec iov[MQ_TX_MSGS];
    struct sockaddr_storage to[MQ_TX_MSGS];
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } cm[MQ_TX_MSGS];
    uint64_t pkts_out, sendmsgs, send_drops, established, closed, failed, timers, retries;
    /* the hooks */
    void *app;
    /* stream bytes of c: 0, or NGTCP2_ERR_CALLBACK_FAILURE with c->why set */
    int (*on_data)(side *s, rconn *c, const uint8_t *d, size_t n);
    void (*before_write)(side *s, rconn *c); /* may queue more into c->out */
    /* c ends (freed right after): peer_closed when the peer closed it, else why */
    void (*on_end)(side *s, rconn *c, const char *why, int peer_closed);
    void (*on_refused)(side *s); /* ICMP port unreachable (client) */
};

/* A UDP socket on 127.0.0.1:0 with big buffers and GRO, and the side's tables. 0 or -1. */
int mq_side_init(side *s, int server);

/* One turn: a read batch, due timers, writes, one send; when nothing was read, a sleep until a
 * datagram, the earliest expiry or `until`, whichever is first, with signal mask `mask` (NULL:
 * unchanged) during the sleep. */
void mq_turn(side *s, uint64_t until, const sigset_t *mask);

/* Client: starts a connection to s->remote. 0, or -1 (nothing left behind). */
int mq_connect(side *s);

/* Client: opens c's stream once the handshake allows. 0, or -1 when c ended (and is freed). */
int mq_open_stream(side *s, rconn *c);

/* Sends c's CONNECTION_CLOSE (no error) into this turn's messages and frees c; mq_flush sends. */
void mq_close(side *s, rconn *c);
void mq_flush(side *s);

/* c has something to write: it is written at the end of this turn. */
void mq_mark_dirty(side *s, rconn *c);

/* Appends to c's send buffer (after wpos; the caller moves ready). 0 or -1 (out of memory). */
int mq_sbuf_append(side *s, sbuf *b, const uint8_t *d, size_t n);
uint8_t *mq_sbuf_at(const sbuf *b, uint64_t off); /* the byte at stream offset off (< wpos) */

#endif

/* SPDX-License-Identifier: MIT */
/* chan.h: a link's channels 1..max, each an independent byte stream of length-framed messages in
 * each direction (channel 0 is the link's own stream, kept in the link: its path is untouched).
 * It owns every channel's send buffer and its acknowledged and lost ranges, its reorder buffer,
 * message framer and flow credit, and the packet scheduler's choice of which channel's bytes go
 * next (strict urgency levels, as RFC 9218's 0..7; within a level one channel at a time, or
 * round-robin among incremental ones). It knows nothing of links: the link layer (link_chan.c)
 * calls it. The table is allocated on a link's first use of a channel other than 0, and each
 * channel on its first use; a channel's buffers are given back when it falls empty (its offsets
 * and counters stay, some 400 bytes, for the life of the link). */
#ifndef PURE_CHAN_H
#define PURE_CHAN_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "cancel.h"
#include "credit.h"
#include "dgram.h"
#include "msgparse.h"
#include "ranges.h"
#include "rob.h"
#include "sendbuf.h"
#include "shared.h"
#include "wire.h"

#define PURE_URGENCY_LEVELS 8  /* urgency 0 (most urgent) .. 7 */
#define PURE_URGENCY_DEFAULT 3 /* RFC 9218's default */

typedef struct pure_chan {
    /* ---- send ---- */
    pure_sendbuf sb;       /* length-prefixed messages, base..end */
    uint64_t send_next;    /* next new stream offset to send */
    uint64_t sent_top;     /* the highest send_next reached: a resend (pure_sendbuf_resend_from)
                              may move send_next back, not what was sent once */
    pure_ranges acked;     /* acknowledged bytes above sb.base */
    pure_ranges lost;      /* bytes to send again */
    uint64_t msg_boundary; /* offset of the next message whose acknowledgement is not counted */
    uint64_t msgs_acked, next_msg_id;
    uint32_t msg_len;
    uint8_t msg_len_known;
    uint8_t credit_pending; /* a CHAN_CREDIT frame is owed to the peer */
    uint8_t want_writable;
    uint8_t acked_moved; /* msgs_acked moved since on_channel_acked last reported it */
    uint8_t stalled;     /* held bytes at recv_next wait for memory (link_chan.c) */
    uint8_t credit_held; /* a grant due waits for memory (link_chan.c) */
    pure_shq *shq;       /* shared bodies in sb's stream (shared.h); NULL: none, sb as is */
    /* ---- receive ---- */
    uint64_t recv_next; /* in-order bytes consumed */
    pure_credit credit; /* receive window and grant; .peer: the peer's limit on our sends */
    pure_rob rob;
    pure_msgparse parse;
    uint64_t peer_delivered; /* the peer's CHAN_DELIVERED (UINT64_MAX: none) */
    /* ---- cancels (cancel.h, link_cancel.c) ---- */
    uint64_t msgs_received; /* the peer's messages delivered or cancelled: the next one's id */
    uint64_t
        msgs_delivered; /* of them, delivered (channel 0's are the link's others: delivered.c) */
    pure_cancels *cx;   /* NULL until the channel cancels or has a deadline, either way */
} pure_chan;

typedef struct pure_chans {
    uint32_t max;            /* channels 1..max may be used */
    uint32_t top;            /* the highest channel made so far (the loops go no further) */
    uint32_t rr;             /* the channel the last incremental turn went to */
    uint32_t credit_pending; /* channels owing a CHAN_CREDIT frame */
    uint32_t stalled;        /* channels with `stalled` set */
    uint32_t held;           /* channels with `credit_held` set */
    pure_dgq dg;             /* the link's datagrams waiting, and their counters (link_chan.c) */
    struct pure_qwatch *qw;  /* the link's queue limit and message ages (qwatch.h), or NULL */
    uint64_t deadline_at;    /* the earliest message deadline of any channel (link_cancel.c) */
    uint8_t cancel_due;      /* a CHAN_CANCEL or CHAN_CANCELLED frame may be owed */
    uint8_t urgency[PURE_CHANNEL_MAX + 1];
    uint8_t incremental[PURE_CHANNEL_MAX + 1];
    pure_chan *c[]; /* [max + 1]; c[0] unused (channel 0 is the link's) */
} pure_chans;

/* A new table for channels 1..max, or NULL without memory. Every channel starts at
 * PURE_URGENCY_DEFAULT and incremental: RFC 9218 starts streams non-incremental, which serves a
 * level one stream at a time, so a bulk transfer nobody configured would hold every other
 * channel of its level behind it, the head-of-line blocking channels exist to end. */
pure_chans *pure_chans_new(const pure_alloc *a, uint32_t max);
/* Frees every channel (their buffers: ring and parse buffers through rx_a, the rest through a). */
void pure_chans_free(pure_chans *t, const pure_alloc *a, const pure_alloc *rx_a);
/* Channel `ch` (1..max), made on first use with the receive window `window`, the peer's first
 * grant `peer_window` (what its transport parameters announced) and message limit max_len. NULL
 * without memory. */
pure_chan *pure_chans_get(pure_chans *t, const pure_alloc *a, uint32_t ch, uint64_t window,
                          uint64_t peer_window, uint32_t max_len);
/* Channel `ch` if it was ever used, else NULL. */
static inline pure_chan *pure_chans_find(const pure_chans *t, uint64_t ch)
{
    return t && ch >= 1 && ch <= t->max ? t->c[ch] : NULL;
}

/* Appends one message (u32 length prefix, then the bytes) to the channel's send buffer, within
 * `backlog` bytes unacknowledged and `queue` bytes not yet sent (0: no queue limit). Returns the
 * message's id on the channel (0, 1, ...), PURE_EAGAIN (a limit; want_writable is set) or
 * PURE_ENOMEM. */
int64_t pure_chan_write(pure_chan *c, const pure_alloc *a, const void *msg, size_t len,
                        uint64_t backlog, uint64_t queue);
/* 1 if the channel has bytes to send now: lost ones, or new ones within the peer's credit. */
int pure_chan_has_data(const pure_chan *c);
/* The next run of bytes to send on the channel: lost bytes first (skipping any acknowledged
 * meanwhile), then new ones within the credit. Returns its length (0: none), *off and *retx. */
uint64_t pure_chan_next_run(pure_chan *c, const pure_alloc *a, uint64_t *off, int *retx);
/* A run [off, off + len) went out (retx: a resend of lost bytes). */
void pure_chan_on_sent(pure_chan *c, const pure_alloc *a, uint64_t off, uint64_t len, int retx);
/* The bytes of a packet that was acknowledged, or lost (to be sent again). */
void pure_chan_on_acked(pure_chan *c, const pure_alloc *a, uint64_t off, uint64_t len);
void pure_chan_on_lost(pure_chan *c, const pure_alloc *a, uint64_t off, uint64_t len);
/* Releases the acknowledged prefix and counts the messages wholly in it. Returns 1 if
 * msgs_acked moved. */
int pure_chan_release_acked(pure_chan *c);
/* The peer's application read the channel up to `offset` (its CHAN_DELIVERED after CLOSE): the
 * bytes above it that ACKs covered were never delivered. */
void pure_chan_on_delivered(pure_chan *c, const pure_alloc *a, uint64_t offset);
/* Bytes accepted and not yet acknowledged. */
static inline uint64_t pure_chan_backlog(const pure_chan *c)
{
    return c->sb.end - c->sb.base;
}
/* Frees what every channel (t may be NULL) received and did not deliver (its reorder ring, a
 * message half assembled): the link is closing. rx_a: the receive-budget allocator the buffers
 * came from. */
void pure_chans_drop_rx(pure_chans *t, const pure_alloc *rx_a, const pure_alloc *a);
/* 1 if nothing is held to send or receive (the buffers may go back). */
int pure_chan_quiet(const pure_chan *c);
/* Gives back the buffers of a quiet channel (offsets and counters stay). */
void pure_chan_shrink(pure_chan *c, const pure_alloc *a, const pure_alloc *rx_a);

/* The scheduler: which stream the next packet's data comes from. has0 says whether channel 0
 * has data; urgency and incremental of channel 0 are in the table's [0]. Strict levels: the
 * lowest urgency with data wins. Within it, a non-incremental channel goes one at a time (the
 * lowest number first, until it has nothing to send); if all with data there are incremental,
 * they take turns packet by packet from the one after the last served. Returns the channel, or
 * -1 if none has data. */
int pure_chans_pick(pure_chans *t, int has0);
/* 1 if any channel 1..max has data to send now (pure_chan_has_data), or a datagram waits. */
int pure_chans_has_data(const pure_chans *t);
/* 1 if no channel holds unacknowledged bytes. */
int pure_chans_send_empty(const pure_chans *t);

#endif

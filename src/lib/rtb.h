/* SPDX-License-Identifier: MIT */
/* rtb.h: the retransmission buffer owns the packets a link has sent and not yet seen
 * acknowledged or declared lost: a ring indexed by packet number, with RFC 9002's loss detection
 * (3 packets or a time threshold behind the largest acknowledged). It says which packets were
 * acknowledged, lost or discarded, each exactly once, and never acts on them: what a packet
 * carried and what its fate means (congestion control, retransmission) is the caller's. */
#ifndef PURE_RTB_H
#define PURE_RTB_H

#include <stdint.h>

#include "alloc.h"
#include "frame.h"

/* Flags of a sent packet. */
enum {
    PURE_SENT_ELICITING = 0x01, /* needs an ACK */
    PURE_SENT_FIN = 0x02,       /* carried the stream's FIN */
    PURE_SENT_CREDIT = 0x04,    /* carried a CREDIT frame */
    PURE_SENT_DATAGRAM = 0x08,  /* carried a DATAGRAM frame (link_chan.c; never resent) */
    PURE_SENT_REKEY = 0x10,
    PURE_SENT_PMTU_PROBE = 0x20,  /* a path MTU probe (pmtud.h): its loss is not congestion */
    PURE_SENT_CHAN_CREDIT = 0x40, /* carried CHAN_CREDIT (link_chan.c) or cancel frames
                                     (link_cancel.c) */
    PURE_SENT_LIVE = 0x80,        /* in flight: not yet acknowledged, lost or discarded */
};

/* One sent packet, kept in the ring until acknowledged or lost. Only packets with
 * PURE_SENT_LIVE are tracked (ACK-only packets are recorded without it). */
typedef struct pure_sent {
    uint64_t time;
    uint64_t data_off;
    uint32_t data_len;
    uint16_t size;
    uint8_t flags;
    uint8_t chan; /* the channel data_off/data_len belong to (0: the link's stream; chan.h) */
} pure_sent;

/* The ring never holds more entries than this (a flight of 16M packets). */
#define PURE_RTB_MAX_CAP (1u << 24)

/* Packet threshold of loss detection (RFC 9002 kPacketThreshold). */
#define PURE_RTB_PACKET_THRESHOLD 3

/* Start one with pure_rtb_init (all zero is not a valid buffer). 56 bytes: it is part of every
 * link, idle or not. */
typedef struct pure_rtb {
    pure_sent *sent;              /* ring of cap entries, pn -> sent[pn & (cap - 1)] */
    uint64_t lo;                  /* oldest packet number still live (or next_pn) */
    uint64_t next_pn;             /* the packet number the next packet sent takes */
    uint64_t largest_acked;       /* UINT64_MAX until an ACK arrives */
    uint64_t loss_time;           /* when a live packet becomes lost by time (UINT64_MAX: none) */
    uint64_t last_eliciting_sent; /* when the latest live packet was sent */
    uint32_t in_flight;           /* live packets (at most cap) */
    uint32_t cap;                 /* ring entries, a power of two (0: no ring) */
} pure_rtb;

/* A walk over the packets an ACK, a loss detection or a discard takes out of flight (an
 * iterator, so reporting them needs neither a callback nor memory). Fill it with one of the
 * _begin functions, then call the matching _next until it returns NULL; make no other call on
 * the buffer meanwhile. */
typedef struct pure_rtb_iter {
    const pure_ack_frame *ack; /* acknowledged: the frame whose ranges are walked */
    uint32_t i;                /* acknowledged: the range being walked */
    uint64_t pn;               /* the next packet number to look at (acknowledged: pn - 1) */
    uint64_t end;              /* lost and discarded: stop before this packet number */
    uint64_t delay, now;       /* lost: the time threshold and the present */
} pure_rtb_iter;

/* Starts an empty buffer: next packet number 0, nothing in flight or acknowledged, no loss
 * time. */
void pure_rtb_init(pure_rtb *rtb);

/* Records the packet sent as number pure_rtb_next_pn() (a copy of *s) and moves next_pn on. A
 * packet with PURE_SENT_LIVE counts in flight until it is acknowledged, lost or discarded; one
 * without (ACK-only) is kept only as a placeholder, or not at all when nothing is in flight. The
 * ring grows (doubling, through a) when the flight outgrows it. Returns 0, or PURE_ENOMEM: the
 * ring would pass PURE_RTB_MAX_CAP entries or memory ran out; nothing was recorded and next_pn
 * is unchanged, so the caller must not send the packet. */
int pure_rtb_on_sent(pure_rtb *rtb, const pure_alloc *a, const pure_sent *s);
/* Makes room to record the next n packets (pure_rtb_on_sent then needs no memory for them, until
 * the flight changes). Returns 0 or PURE_ENOMEM (as pure_rtb_on_sent would). */
int pure_rtb_reserve(pure_rtb *rtb, const pure_alloc *a, uint32_t n);

/* Takes the next packet number for a packet the buffer does not keep (the CLOSE of a closing
 * link) and returns it. Its ring slot is not written: call it only when no packet will be
 * recorded, acknowledged or discarded after it. */
uint64_t pure_rtb_skip(pure_rtb *rtb);

/* Starts walking the packets an ACK frame newly acknowledges (pure_rtb_acked_next), and takes
 * its largest packet number as the largest acknowledged if it is larger. Returns 0, or
 * PURE_EPROTO if the frame acknowledges a packet number never sent: the frame must then be
 * ignored (nothing changed; do not call _next). */
int pure_rtb_acked_begin(pure_rtb *rtb, pure_rtb_iter *it, const pure_ack_frame *ack);

/* The next packet the ACK newly acknowledges, in the frame's range order, largest number first
 * within a range; it is out of flight already. Stores its number in *pn and returns the entry
 * (valid until the next call that records a packet or frees the buffer), or NULL when every
 * range is walked. A packet already acknowledged, lost or discarded is never returned. */
const pure_sent *pure_rtb_acked_next(pure_rtb *rtb, pure_rtb_iter *it, uint64_t *pn);

/* Starts loss detection at `now`, with `delay` the time threshold (9/8 of the RTT, as
 * pure_rtt_loss_delay gives): a live packet below the largest acknowledged is lost once it is
 * PURE_RTB_PACKET_THRESHOLD packet numbers behind it, or sent at least `delay` before now.
 * The loss time is recomputed as the walk goes: walk it to the end. */
void pure_rtb_lost_begin(pure_rtb *rtb, pure_rtb_iter *it, uint64_t delay, uint64_t now);

/* The next lost packet, oldest first; it is out of flight already. Stores its number in *pn
 * and returns the entry, or NULL at the end of the walk (pure_rtb_loss_time is then the earliest
 * time a live packet becomes lost, UINT64_MAX if none will). */
const pure_sent *pure_rtb_lost_next(pure_rtb *rtb, pure_rtb_iter *it, uint64_t *pn);

/* Starts walking the live packets from first_pn on, to be treated as never sent (the I/O layer
 * refused them). Their numbers stay used. The loss time is left as it is. */
void pure_rtb_discard_begin(pure_rtb *rtb, pure_rtb_iter *it, uint64_t first_pn);

/* The next discarded packet, oldest first, out of flight already; NULL at the end. */
const pure_sent *pure_rtb_discard_next(pure_rtb *rtb, pure_rtb_iter *it, uint64_t *pn);

/* Releases the ring: every packet still live is forgotten (nothing in flight) and the buffer
 * tracks again from next_pn. The packet numbers, largest acknowledged and loss time stay. */
void pure_rtb_free(pure_rtb *rtb, const pure_alloc *a);

/* The packet number the next packet sent takes. */
static inline uint64_t pure_rtb_next_pn(const pure_rtb *rtb)
{
    return rtb->next_pn;
}
/* Live (ack-eliciting, unacknowledged) packets. */
static inline uint64_t pure_rtb_in_flight(const pure_rtb *rtb)
{
    return rtb->in_flight;
}
/* The earliest time a live packet becomes lost by the time threshold, UINT64_MAX if none: call
 * pure_rtb_lost_begin then. */
static inline uint64_t pure_rtb_loss_time(const pure_rtb *rtb)
{
    return rtb->loss_time;
}
/* When the latest live packet was sent (for the probe timeout). */
static inline uint64_t pure_rtb_last_eliciting_sent(const pure_rtb *rtb)
{
    return rtb->last_eliciting_sent;
}

#endif

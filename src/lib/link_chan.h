/* SPDX-License-Identifier: MIT */
/* link_chan.h: a link's channels 1..max (link_chan.c) over chan.h: sending on them, the frames
 * they put in a packet, what arrives for them, and what an ACK or a loss means for them. Channel
 * 0 stays the link's own stream (link_send.c, link_recv.c); a link that never uses another
 * channel has link->chans NULL and none of this runs. */
#ifndef PURE_LINK_CHAN_H
#define PURE_LINK_CHAN_H

#include "link_cancel.h"
#include "state.h"

/* What on_chan_frame returns for data it could not hold (the packet is then not acknowledged). */
#define PURE_CHAN_DROPPED PURE_CANCEL_DROPPED

/* 1 if channels 1..max have data that may go now. */
static inline int pure_link_chan_has_data(const pure_link *link)
{
    return link->chans && pure_chans_has_data(link->chans);
}
/* 1 if nothing is held unacknowledged on channel 0 nor on any other channel. */
static inline int pure_link_sends_empty(const pure_link *link)
{
    return link->sb.base == link->sb.end && (!link->chans || pure_chans_send_empty(link->chans));
}
/* 1 if a CHAN_CREDIT frame is owed. */
static inline int pure_link_chan_credit_due(const pure_link *link)
{
    return link->chans && link->chans->credit_pending;
}

/* The packet's stream data comes from channel ch (>= 1, pure_chans_pick's choice): as much as
 * fits, lost bytes first (with `whole`, only a run that fits wholly); fills *rec. Returns 1 if a
 * frame went in. */
int pure_link_chan_put_data(pure_link *link, int ch, pure_pkt *k, pure_sent *rec, int whole);
/* Puts the oldest queued datagram if it fits (dropping those too large for the path now).
 * Returns 1 if one went in. */
int pure_link_chan_put_datagram(pure_link *link, pure_pkt *k);
/* 1 if a datagram waits. */
static inline int pure_link_chan_datagram_due(const pure_link *link)
{
    return link->chans && link->chans->dg.count;
}
/* Puts the CHAN_CREDIT frames owed that fit. Returns 1 if one went in. */
int pure_link_chan_put_credits(pure_link *link, pure_pkt *k);

/* A CHAN_DATA, CHAN_CREDIT, CHAN_DELIVERED, CHAN_CANCEL, CHAN_CANCELLED or DATAGRAM frame. Returns
 * 0, PURE_CHAN_DROPPED, or a code that closes the link (PURE_EPROTO for a channel above
 * max_channels or a datagram larger than max_datagram_size, PURE_EFLOW, PURE_EMSGSIZE,
 * PURE_ENOMEM). */
int pure_link_chan_on_frame(pure_link *link, const pure_frame *f, uint64_t now);

/* A sent packet's channel bytes were acknowledged / lost (recovery.c). */
void pure_link_chan_on_acked(pure_link *link, const pure_sent *e);
void pure_link_chan_on_lost(pure_link *link, const pure_sent *e);
/* A probe timeout: each channel's oldest unacknowledged bytes (up to mss) go again first, as
 * channel 0's do (recovery.c): the peer may have dropped everything after them for want of
 * memory, and only they can move it on. */
void pure_link_chan_on_pto(pure_link *link, uint32_t mss);
/* After an ACK: release what is acknowledged. Returns non-zero if any channel's bytes were
 * (bit 0: messages too). */
int pure_link_chan_after_ack(pure_link *link);
/* Tells the application (on_channel_acked) of each channel whose messages were newly
 * acknowledged. Stops if a callback ends the link. */
void pure_link_chan_report_acked(pure_link *link);
/* Channels whose held bytes could not be consumed for want of memory try again (after a packet
 * of the peer arrived). Returns 0, or a code that closes the link (the held bytes broke the
 * framing: PURE_EMSGSIZE, PURE_ENOMEM). */
int pure_link_chan_retry(pure_link *link, uint64_t now);
/* 1 if a channel waits for memory: to consume what it holds (the peer is mid-message), or to
 * grant credit due. */
static inline int pure_link_chan_stalled(const pure_link *link)
{
    return link->chans && (link->chans->stalled || link->chans->held);
}
/* 1 if a channel holds in-order bytes not yet delivered (acknowledged, they come no more). */
static inline int pure_link_chan_undelivered(const pure_link *link)
{
    const pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++)
        if (t->c[i] && (t->c[i]->stalled || pure_rob_holds(&t->c[i]->rob, t->c[i]->recv_next)))
            return 1;
    return 0;
}
/* The reader resumed (pure_link_resume_recv) or memory came back: grant the credit held back. */
void pure_link_chan_recv_resumed(pure_link *link, uint64_t now);
/* 1 if every channel's backlog is at most half its limits (on_writable may run). */
int pure_link_chan_writable(const pure_link *link);
/* Gives back the buffers of quiet channels (an idle link's release). */
void pure_link_chan_shrink(pure_link *link);
/* Frees the table (the link is freed). */
void pure_link_chan_free(pure_link *link);
/* The initiator's RESP said what the peer takes: -1 if the application already used a channel
 * above the peer's limit (it could send on any up to max_channels while the handshake ran), 0 if
 * not. */
int pure_link_chan_peer_known(pure_link *link);

#endif

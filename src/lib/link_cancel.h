/* SPDX-License-Identifier: MIT */
/* link_cancel.h: cancels and deadlines of a link's channels 1..max (link_cancel.c over
 * cancel.h): the public calls, the CHAN_CANCEL and CHAN_CANCELLED frames in a packet and
 * arriving, what their packets' fate means, the receiver skipping a cancelled message, and the
 * deadline timer. A link that never cancels runs none of it. It sits below
 * link_chan.c, which calls it from the channels' frames and data path. */
#ifndef PURE_LINK_CANCEL_H
#define PURE_LINK_CANCEL_H

#include "state.h"

/* 1 if a CHAN_CANCEL or CHAN_CANCELLED frame may be owed. */
static inline int pure_link_cancel_due(const pure_link *link)
{
    return link->chans && link->chans->cancel_due;
}
/* Puts the cancel frames owed that fit, recording that packet `pn` carries the answers. Returns
 * 1 if one went in (the packet then has PURE_SENT_CHAN_CREDIT: its fate comes back below). */
int pure_link_cancel_put(pure_link *link, pure_pkt *k, uint64_t pn);
/* In the CLOSE's packet, before channel ch's CHAN_DELIVERED: every answer not yet acknowledged,
 * so the peer's account of that channel is exact. Returns -1 if they do not all fit. */
int pure_link_cancel_put_answers(pure_link *link, uint32_t ch, pure_pkt *k);
/* A packet with PURE_SENT_CHAN_CREDIT was acknowledged (its number) / lost. */
void pure_link_cancel_on_acked(pure_link *link, uint64_t pn);
void pure_link_cancel_on_lost(pure_link *link);
/* What a frame handler returns for a frame it could not hold (the packet is then not
 * acknowledged: the peer sends it again); link_chan.h's name for it is PURE_CHAN_DROPPED. */
#define PURE_CANCEL_DROPPED 1
/* What pure_link_cancel_on_frame returns when the channel's in-order point moved past a
 * cancelled message: the caller consumes what the channel holds after it (link_chan.c). */
#define PURE_CANCEL_DRAIN 2
/* A CHAN_CANCEL or CHAN_CANCELLED frame. Returns 0, PURE_CANCEL_DRAIN, PURE_CANCEL_DROPPED (no
 * room), or a code that closes the link (PURE_EPROTO, PURE_ENOMEM). An answer may let bytes go:
 * the caller releases them as after an ACK (link_recv.c), or, in a CLOSE's packet, the
 * CHAN_DELIVERED that follows does. */
int pure_link_cancel_on_frame(pure_link *link, const pure_frame *f);
/* The in-order point of channel ch reached (or stands inside) the lowest range the peer
 * cancelled: drop the message, report it, move past. Returns 0, 1 (the application closed the
 * link) or PURE_EPROTO (the range is not that message). */
int pure_link_cancel_skip(pure_link *link, uint32_t ch, pure_chan *c);
/* After an ACK moved channels' acknowledged messages: their deadlines are met. */
void pure_link_cancel_after_ack(pure_link *link);
/* The deadline timer: cancels the messages whose deadline passed. */
void pure_link_cancel_expired(pure_link *link, uint64_t now);

#endif

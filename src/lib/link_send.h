/* SPDX-License-Identifier: MIT */
/* link_send.h: building a link's packets (link_send.c): what is due (ACK, control frames,
 * stream data within credit, congestion window and pacing), frames written through the checked
 * cursor, each packet sealed once, bursts of equal-sized segments for GSO. */
#ifndef PURE_LINK_SEND_H
#define PURE_LINK_SEND_H

#include "state.h"

/* Bursts of segments at most this large take other links' packets, padded to the same size;
 * larger segments take other links' packets that fill them (PURE_WRITE_JOIN). */
#define PURE_COALESCE_MAX 512

/* pure_link_write's `pad`: */
enum {
    PURE_WRITE_OWN = 0,  /* the link's own burst, at its own segment size */
    PURE_WRITE_PAD = 1,  /* one packet, padded to exactly cap bytes */
    PURE_WRITE_JOIN = 2, /* packets of exactly *segment bytes (given), the last maybe shorter */
    PURE_WRITE_LEAD = 3, /* the link's own burst, other links to the same address waiting: a
                          * short first packet is padded a little, so theirs fit its size */
};

/* Writes the link's next burst into buf (cap bytes): returns its length (0: nothing due) and the
 * segment size in *segment. PURE_WRITE_PAD and PURE_WRITE_JOIN write only for an open link, to
 * join another link's burst to the same address: PAD at most one packet, padded to exactly cap
 * bytes; JOIN full packets of the *segment bytes asked (none if the link's packets are smaller),
 * and at most one shorter packet, which ends the burst (GSO lets only the last segment be
 * shorter). PURE_WRITE_LEAD is PURE_WRITE_OWN for a burst that others may join. */
int64_t pure_link_write(pure_link *link, uint8_t *buf, size_t cap, size_t *segment, uint64_t now,
                        int pad);
/* Has the link something it may send now? */
int pure_link_wants_send(const pure_link *link, uint64_t now);

#endif

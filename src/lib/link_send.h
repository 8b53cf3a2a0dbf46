/* SPDX-License-Identifier: MIT */
/* link_send.h: building a link's packets (link_send.c): what is due (ACK, control frames,
 * stream data within credit, congestion window and pacing), frames written through the checked
 * cursor, each packet sealed once, bursts of equal-sized segments for GSO. */
#ifndef PURE_LINK_SEND_H
#define PURE_LINK_SEND_H

#include "state.h"

/* Bursts of segments at most this large take other links' packets, padded to the same size. */
#define PURE_COALESCE_MAX 512

/* Writes the link's next burst into buf (cap bytes): returns its length (0: nothing due) and the
 * segment size in *segment. With pad, writes at most one packet, padded to exactly cap bytes,
 * and only for an open link (to join another link's burst). */
int64_t pure_link_write(pure_link *link, uint8_t *buf, size_t cap, size_t *segment, uint64_t now,
                        int pad);
/* Has the link something it may send now? */
int pure_link_wants_send(const pure_link *link, uint64_t now);

#endif

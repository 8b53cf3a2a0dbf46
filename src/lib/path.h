/* SPDX-License-Identifier: MIT */
/* path.h: path validation (RFC 9000 sections 8.2 and 9): when a link's newest packet comes from
 * a new address, the link answers there at most PURE_AMPLIFICATION times what came from it until
 * the peer echoes an unpredictable 64-bit challenge sent to that address (PATH_CHALLENGE /
 * PATH_RESPONSE). An ACK cannot validate a path: packet numbers are sequential, so a peer that
 * spoofs one packet from a victim's address could guess them and turn the link's flight on the
 * victim. A path to another host, once validated, starts with a fresh congestion window and RTT
 * estimate (section 9.4); a NAT rebinding (the same host, another port) keeps them. A return to
 * the last validated address needs no new challenge. */
#ifndef PURE_PATH_H
#define PURE_PATH_H

#include <stdint.h>

#include "frame.h"
#include "state.h"

/* An authenticated packet numbered pn, n bytes, came from `from`: follows the peer to a new
 * address if it is the newest packet, and counts what an unvalidated address sent. */
void pure_path_on_packet(pure_link *link, const pure_addr *from, uint64_t pn, size_t n,
                         uint64_t now);
/* A PATH_CHALLENGE from the peer: the echo is owed. */
void pure_path_on_challenge(pure_link *link, const uint8_t data[PURE_PATH_DATA_LEN]);
/* A PATH_RESPONSE from the peer: validates the path if it echoes our challenge. */
void pure_path_on_response(pure_link *link, const uint8_t data[PURE_PATH_DATA_LEN], uint64_t now);
/* 1 if a PATH_CHALLENGE or PATH_RESPONSE waits to be sent. */
static inline int pure_path_due(const pure_link *link)
{
    return link->b && (link->b->path.challenge_pending || link->b->path.response_pending);
}
/* Writes what is due into the packet being built. Returns 1 if a frame went in (both are
 * ack-eliciting), 0 if none (nothing due, or no room). */
int pure_path_put_frames(pure_link *link, pure_pkt *k);

#endif

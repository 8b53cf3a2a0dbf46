/* SPDX-License-Identifier: MIT */
/* rekey.h: rekeying an open link (rekey.c): a fresh X25519 exchange in REKEY frames mixed into
 * the chaining key, the switch of phase, and when one is due (time, packets, the AEAD limit). */
#ifndef PURE_REKEY_H
#define PURE_REKEY_H

#include "frame.h"
#include "state.h"

/* Has the transmit key sealed half its packets (rekey_after_packets)? From there its successor
 * is sought, whatever the link sends (ACKs count too), so the exchange has the other half to
 * complete in, lost REKEY frames and all; link_send.c looks at each packet of a burst. */
static inline int pure_rekey_half_spent(const pure_link *link)
{
    return link->keys_packets >= link->ctx->s.rekey_after_packets / 2;
}
/* Has it sealed three quarters? The last quarter is the exchange's: data waits for it
 * (pure_rekey_holds_data) and, while it is under way, ACKs are spared (pure_acktr_on_packet's
 * `sparing`: on a lossy, reordering path the ACKs owed at once on every gap spent the quarter
 * before the exchange's round trip was over; with rekey_after_packets 256 and 1 Gbit/s of
 * echoes, 65 ACK-only packets in 3.5 ms, closing the link). */
static inline int pure_rekey_last_quarter(const pure_link *link)
{
    return link->keys_packets >= link->ctx->s.rekey_after_packets / 4 * 3;
}
/* Is a rekey due (half the key's packets, or rekey_after_time with data to send)? */
int pure_rekey_due(const pure_link *link, uint64_t now);
/* Starts a rekey: a REQUEST with a fresh ephemeral key goes out. 0 or an error (the link
 * carries on under its keys and tries again later). */
int pure_rekey_start(pure_link *link, uint64_t now);
/* A REKEY frame arrived (request or reply): answer, or switch to the next keys. */
void pure_rekey_on_frame(pure_link *link, const uint8_t *frame, uint64_t now);
/* A packet authenticated under the next phase: the peer switched, so switch sending too. */
void pure_rekey_on_phase(pure_link *link, uint8_t phase, uint64_t now);
/* A packet that carried a REKEY frame was lost: send the frame again. */
void pure_rekey_on_lost(pure_link *link);
/* Writes a pending REKEY frame into the packet if it fits; returns 1 if it did, else 0. */
int pure_rekey_put_frame(pure_link *link, pure_pkt *k);
/* Has the rekey a frame to send? */
int pure_rekey_send_pending(const pure_link *link);
/* Non-zero while new data should wait for the new keys: an exchange is under way (this side asked
 * or answered), three quarters of the key are spent, and the request is younger than eight probe
 * timeouts. The last quarter is then left to ACKs and the REKEY frames that complete the exchange:
 * a window larger than what the key has left (random loss keeps windows open) would otherwise run
 * the key out before the peer's reply came, closing the link. Meanwhile the request goes again
 * every probe timeout without an answer (the reply may be what was lost). A peer that does not
 * answer within eight probe timeouts gets the data again, and the key runs out as before
 * (PURE_ECRYPTO). Returns when to look again (arm a timer for it: the next request or the end of
 * the hold), or 0 if data may go. */
uint64_t pure_rekey_holds_data(pure_link *link, uint64_t now);
/* Ends a rekey under way: its ephemeral key and next keys wiped, its state freed. */
void pure_rekey_free(pure_link *link);

#endif

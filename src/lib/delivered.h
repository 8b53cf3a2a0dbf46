/* SPDX-License-Identifier: MIT */
/* delivered.h: what the closer read (docs/protocol.md, "Closing"). A CLOSE packet carries, after
 * its CLOSE frame, how much of the peer's streams this side's application had, and the peer
 * reports its on_closed from that: DELIVERED (the stream offset), then for each channel the
 * answers to cancels it owed and CHAN_DELIVERED, and, to a peer that reads them
 * (PURE_TP_F_DELIVERED_COUNT), DELIVERED_COUNT frames: the number of messages of each stream the
 * application had. An offset is exact only while the peer still holds the bytes above it; a
 * count is exact also when the peer released bytes this side acknowledged and then dropped
 * (received bytes held back by the receive budget or for memory when the application aborts). */
#ifndef PURE_DELIVERED_H
#define PURE_DELIVERED_H

#include "frame.h"
#include "state.h"

/* Puts DELIVERED, then what each channel and count fits. Returns 0, or -1 if not even
 * DELIVERED fits (nothing written). */
int pure_delivered_put(pure_link *link, pure_pkt *k);

/* Takes the frames that follow a peer's CLOSE (p .. end: the rest of its packet) before the
 * CLOSE is reported: what of our streams the peer's application had. */
void pure_delivered_take(pure_link *link, const uint8_t *p, const uint8_t *end, uint64_t now);

#endif

/* SPDX-License-Identifier: MIT */
/* link_recv.h: a link's incoming packets (link_recv.c): replay check, opening in place, frame
 * dispatch, in-order delivery, out-of-order bytes held, receive credit, and what is owed back. */
#ifndef PURE_LINK_RECV_H
#define PURE_LINK_RECV_H

#include "state.h"

/* Processes one DATA packet d (n bytes, from `from`) for the link, in place. Returns 0, or a
 * negative code: the packet was dropped (counted), or it closed the link. */
int pure_link_recv(pure_link *link, const pure_addr *from, uint8_t *d, size_t n, uint64_t now);
/* The link was held back by max_receive_memory and memory came free: consume what its ring
 * holds, grant the credit held back, and queue what it owes the peer. */
void pure_link_recv_unheld(pure_link *link, uint64_t now);
/* The retry timer fired (pace_at): feeds again the in-order bytes a ring held for want of
 * memory (channel 0's and the channels'), if any wait. */
void pure_link_recv_retry(pure_link *link, uint64_t now);
/* A close (the peer's, or a graceful one of ours) waits for bytes this side acknowledged: those
 * held back by the receive budget take the owner's exemption now (rxmem.c) and are delivered.
 * Returns 1 if the link is open and some still wait (for memory, or the exemption). */
int pure_link_recv_owed_now(pure_link *link, uint64_t now);
/* pure_link_resume_recv: grants the credit a paused link held back, if it is due. */
void pure_link_recv_resumed(pure_link *link, uint64_t now);

#endif

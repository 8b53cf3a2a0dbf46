/* SPDX-License-Identifier: MIT */
/* flight.h: the context-wide limit on bytes in flight (pure_ctx_set_max_in_flight): the sum of
 * every link's congestion-controlled packets in flight (ctx->flight, each packet charged its size
 * plus PURE_FLIGHT_PACKET_COST), each link's fair share of it (the limit over the links with
 * packets in flight or waiting for room), the links held above their share until their own ACKs
 * bring them within, the links with nothing in flight that wait their turn, oldest first, and
 * their wake-up.
 *
 * Why: all of a context's links share one socket, and so do the peer's. A thousand links each
 * within its own window can together put more in flight than that socket's receive buffer holds;
 * the kernel then drops whole flights at once, every link waits a probe timeout, and the probes
 * meet the same full buffer. Above the limit new data waits in the send rings instead. */
#ifndef PURE_FLIGHT_H
#define PURE_FLIGHT_H

#include <stdint.h>

#include "pure.h"

/* What a receiving kernel charges a datagram's socket buffer beyond its payload (struct sk_buff,
 * skb_shared_info, headers and rounding: about 600-900 bytes on Linux when datagrams are not
 * coalesced). Without it 4 MiB of 100-byte packets would count as 4 MiB, yet fill 30 MiB of
 * receive buffer. */
#define PURE_FLIGHT_PACKET_COST 768

/* Packets a waiting link may send when its turn comes, while others wait: links take turns in
 * small steps, so the last of a thousand is not kept waiting for the others' whole windows. */
#define PURE_FLIGHT_TURN 4

/* A congestion-controlled packet of `size` bytes went out, or left flight (acknowledged, lost
 * or discarded); each is counted in the link's share and the context's sum. A held link that
 * pure_flight_gone finds within its share again is marked pending. */
void pure_flight_sent(pure_link *link, uint64_t size);
void pure_flight_gone(pure_link *link, uint64_t size);
/* May the link put more stream data in flight? 1 if the context is under its limit (or has
 * none) with nobody queued, or the link is within its fair share, or it was woken for its turn;
 * else 0: a link with packets in flight is held until pure_flight_gone finds it within its share
 * (or with nothing left in flight), one without joins the queue (once) for pure_flight_wake. */
int pure_flight_allowed(pure_link *link);
/* The link's burst is built: a turn given by pure_flight_wake is used up. */
void pure_flight_turn_end(pure_link *link);
/* Takes the link off the wait list, if it is on it, and its share out of the sum (before its
 * busy state goes). */
void pure_flight_forget(pure_link *link);
/* Marks waiting links pending, oldest first, while the room under the limit lasts (one packet's
 * worth each); called at the end of every public call. */
void pure_flight_wake(pure_ctx *ctx);

#endif

/* SPDX-License-Identifier: MIT */
/* lifecycle.h: a link's life below the modules that serve it (lifecycle.c): creation, the
 * checked state machine, the state held only while busy, terminate and the on_closed report,
 * on_writable, and the end of a graceful close. Nothing here calls up. */
#ifndef PURE_LIFECYCLE_H
#define PURE_LIFECYCLE_H

#include "state.h"

/* A new link to `peer` (initiator: HANDSHAKE, else UNVALIDATED), filed in the index table, its
 * stream opened with the preamble; NULL on failure, with *err (if err is non-NULL) PURE_ENOMEM,
 * PURE_ELIMIT or PURE_ECRYPTO (no randomness for its index). */
pure_link *pure_link_alloc(pure_ctx *ctx, const pure_addr *peer, int initiator, uint64_t now,
                           int *err);
/* Moves the link to state st if the state machine allows it (else, a bug in the core: the link
 * is marked CLOSED). Leaving UNVALIDATED uncounts a half-open link, once. */
void pure_link_set_state(pure_link *link, enum pure_link_state st);
/* Keys are ready: the data phase starts (OPEN). */
void pure_link_open(pure_link *link, uint64_t now);
/* Makes sure link->b exists. Returns 0 or PURE_ENOMEM. */
int pure_link_busy(pure_link *link, uint64_t now);
/* Gives an idle link's buffers back. Returns 1 if the link still has data queued or in flight
 * (nothing was released: look again later), else 0. */
int pure_link_release_buffers(pure_link *link);
/* Ends the link: error 0 for a graceful end. With send_close (and keys), it goes CLOSING and
 * sends CLOSE a few times; else it is CLOSED at once, off the tables, and freed when the public
 * call under way returns (pure_link_end_call). on_closed is reported once either way. */
void pure_link_terminate(pure_link *link, int error, uint64_t code, const char *reason,
                         int send_close, uint64_t now);
/* The peer's CLOSE ends an open link (error and reason from it): on_closed now, and the link
 * answers with a CLOSE of its own (code 0, no reason), once, then ends; the peer's closing
 * period ends on that answer, and a peer whose every CLOSE copy was lost keeps sending them
 * until one is answered (timers.c). Without keys it ends at once, unanswered. */
void pure_link_end_by_peer(pure_link *link, int error, const char *reason, uint64_t now);
/* Reports the link closed to the application (on_closed), once: no callback of the link runs
 * after it. A responder's link the application never accepted closes silently. */
void pure_link_notify_closed(pure_link *link, int error, const char *reason);
/* Keeps the reason a CLOSE frame will carry (cut to fit; may already be the kept one). */
void pure_link_keep_reason(pure_link *link, const char *reason, uint64_t now);
/* 1 while received bytes this side acknowledged wait to be delivered: for memory (nomem.h), for
 * the receive budget (rxmem.c), or behind the message being delivered now. The peer counts them
 * delivered, so neither a graceful close of ours nor the peer's CLOSE may end the link before. */
int pure_link_owes_delivery(const pure_link *link);
/* A graceful close ends once everything accepted has been acknowledged: sends the CLOSE. */
void pure_link_close_if_done(pure_link *link, uint64_t now);
/* Stream bytes were acknowledged: a graceful close made progress, and may be done. */
void pure_link_on_acked(pure_link *link, uint64_t now);
/* If the application waits for on_writable and the queues are half empty, tell it. */
void pure_link_check_writable(pure_link *link);
/* Frees what every link holds (send buffer, busy state, sent packets) and the struct itself;
 * the link is off every list and table already. */
void pure_link_free_parts(pure_link *link);

#endif

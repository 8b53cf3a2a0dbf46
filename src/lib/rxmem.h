/* SPDX-License-Identifier: MIT */
/* rxmem.h: the context's receive memory budget (max_receive_memory; docs/protocol.md "Receive
 * memory"): every link's assembly buffer and out-of-order ring is allocated through
 * pure_rxmem_alloc's allocator, which keeps ctx->guard.rx_memory and its peak; which link may grow
 * its buffers, which is held back (no new credit), the one exempt owner, and the wake-up of
 * held-back links when memory comes free. */
#ifndef PURE_RXMEM_H
#define PURE_RXMEM_H

#include <stdint.h>

#include "alloc.h"
#include "pure.h"

/* A stalled owner loses its exemption to the next link that needs one after this long. */
#define PURE_RX_OWNER_PATIENCE 1000000000ull /* 1 s */

/* The allocator for receive buffers: ctx's own, accounted in ctx->guard. */
pure_alloc pure_rxmem_alloc(pure_ctx *ctx);
/* Bytes left under max_receive_memory (0 at or over it). */
uint64_t pure_rxmem_room(const pure_ctx *ctx);
/* The largest size a receive buffer of `cap` bytes of this link may grow to now: unlimited for
 * the owner; else what fits under max_receive_memory, and at least `free_size` (what a link may
 * always hold). Pass cap 0 when the old buffer lives on while the new one is filled. */
uint64_t pure_rxmem_limit(const pure_link *link, uint64_t cap, uint64_t free_size);
/* The ring size this link may have now: what the budget leaves; for the owner, at least what its
 * allowance (max_message_size past the budget) leaves beside its whole message and old ring. */
uint64_t pure_rxmem_ring_limit(const pure_link *link);
/* The link needs more memory than the budget leaves. Returns 1 if it is (now) the owner, exempt
 * from the budget: it is assembling a message that fits, beside what the owner and displaced
 * owners hold, in max_message_size, and there was no owner or the owner consumed nothing for
 * PURE_RX_OWNER_PATIENCE (it is then displaced). Else holds the link back (counted in
 * rx_memory_stalls; woken when memory comes free) and returns 0. */
int pure_rxmem_claim(pure_link *link, uint64_t now);
/* As pure_rxmem_claim, but the owner is displaced without waiting for its patience to run out:
 * for a link whose peer closed and counts what the link holds delivered (nothing more will come
 * to let it finish later). */
int pure_rxmem_claim_at_once(pure_link *link, uint64_t now);
/* update_credit asks: 1 if the link may be granted credit (under the budget, it needs no more
 * memory, or it is the owner), else as pure_rxmem_claim. */
int pure_rxmem_may_credit(pure_link *link, uint64_t now);
/* The link consumed `n` stream bytes (the owner's progress). */
void pure_rxmem_consumed(pure_link *link, uint64_t n, uint64_t now);
/* After the link consumed what it could: an owner whose message is delivered gives up its
 * exemption; a link with nothing in progress while memory is short gives back its kept buffers,
 * and what it held past the budget stops being counted. */
void pure_rxmem_settle(pure_link *link);
/* link->b is about to go: off the held list, no longer the owner or counted as a former one. */
void pure_rxmem_forget(pure_link *link);
/* Waking held-back links, oldest first, while memory allows (at the end of a read or timeout
 * when ctx->rx_wake is set): the caller runs pure_link_recv_unheld for each link
 * pure_rxmem_wake_next returns until it returns NULL. */
typedef struct pure_rxmem_waking {
    uint32_t left;     /* links held when the wake began, not yet looked at */
    uint64_t promised; /* receive windows granted to the links woken so far */
} pure_rxmem_waking;
void pure_rxmem_wake_begin(pure_ctx *ctx, pure_rxmem_waking *w);
pure_link *pure_rxmem_wake_next(pure_ctx *ctx, pure_rxmem_waking *w);

#endif

/* SPDX-License-Identifier: MIT */
/* rxmem.c: the context's receive memory budget (max_receive_memory). Every link's assembly buffer
 * (msgparse) and out-of-order ring is allocated through an accounting allocator that keeps
 * guard.rx_memory and its peak. A link's buffers grow only within what the budget leaves (an
 * assembly buffer may always reach PURE_MSGPARSE_MIN, so short messages split across packets
 * flow); what does not fit is dropped unacknowledged and sent again by the peer, and a link that
 * needs memory (its message is larger than its buffer, or it holds out-of-order bytes) is granted
 * no new credit while rx_memory is at or over the budget: it is held back.
 *
 * One link at a time, the owner, may grow its assembly buffer past the budget, so the context
 * cannot deadlock with every link holding part of a message: the first link held back while there
 * is no owner, or while the owner has consumed nothing for PURE_RX_OWNER_PATIENCE (a stalled owner
 * is displaced and what it holds stays counted until its message is delivered). A link becomes the
 * owner only if its whole message fits, beside what the current and displaced owners hold, in
 * max_message_size; so rx_memory never exceeds max_receive_memory + max_message_size +
 * PURE_MSGPARSE_MIN per link. The owner keeps its exemption until its message is delivered.
 *
 * Held-back links wait on a list, oldest first, and are woken at the end of the read or timeout
 * in which memory fell below the budget or ownership came free; nothing scans all links. The rule
 * is written down in docs/protocol.md, "Receive memory". */
#include "rxmem.h"
#include "state.h"

static void account(pure_ctx *ctx, size_t old, size_t n)
{
    pure_guard_stats *g = &ctx->guard;
    if (n >= old) {
        g->rx_memory += n - old;
        if (g->rx_memory > g->rx_memory_peak)
            g->rx_memory_peak = g->rx_memory;
    } else {
        g->rx_memory -= old - n;
        if (ctx->rx_held_head && g->rx_memory < ctx->s.max_receive_memory)
            ctx->rx_wake = 1;
    }
}

static void *rx_alloc(void *user, size_t n)
{
    pure_ctx *ctx = user;
    void *p = pure_mem_alloc(&ctx->alloc, n);
    if (p)
        account(ctx, 0, n);
    return p;
}

static void rx_free(void *user, void *p, size_t n)
{
    pure_ctx *ctx = user;
    pure_mem_free(&ctx->alloc, p, n);
    account(ctx, n, 0);
}

static void *rx_realloc(void *user, void *p, size_t old, size_t n)
{
    pure_ctx *ctx = user;
    void *q = ctx->alloc.realloc(ctx->alloc.user, p, old, n);
    if (q)
        account(ctx, p ? old : 0, n);
    return q;
}

pure_alloc pure_rxmem_alloc(pure_ctx *ctx)
{
    pure_alloc a = {rx_alloc, rx_free, ctx, ctx->alloc.realloc ? rx_realloc : NULL};
    return a;
}

uint64_t pure_rxmem_room(const pure_ctx *ctx)
{
    uint64_t used = ctx->guard.rx_memory, budget = ctx->s.max_receive_memory;
    return used < budget ? budget - used : 0;
}

uint64_t pure_rxmem_limit(const pure_link *link, uint64_t cap, uint64_t free_size)
{
    if (link == link->ctx->rx_owner)
        return UINT64_MAX;
    uint64_t lim = cap + pure_rxmem_room(link->ctx);
    return lim > free_size ? lim : free_size;
}

/* Needs more memory to go on: its message is larger than its buffer, or it holds bytes ahead of
 * a gap. */
static int needs(const pure_link *link)
{
    return link->b &&
           (pure_msgparse_wants_memory(&link->b->parse) || !pure_rob_empty(&link->b->rob));
}

static void unhold(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    pure_busy *b = link->b;
    if (!b->held)
        return;
    if (b->held_prev)
        b->held_prev->b->held_next = b->held_next;
    else
        ctx->rx_held_head = b->held_next;
    if (b->held_next)
        b->held_next->b->held_prev = b->held_prev;
    else
        ctx->rx_held_tail = b->held_prev;
    b->held_prev = b->held_next = NULL;
    b->held = 0;
    ctx->rx_held_n--;
}

static void hold(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    pure_busy *b = link->b;
    if (b->held)
        return;
    ctx->guard.rx_memory_stalls++;
    b->held = 1;
    b->held_next = NULL;
    b->held_prev = ctx->rx_held_tail;
    if (ctx->rx_held_tail)
        ctx->rx_held_tail->b->held_next = link;
    else
        ctx->rx_held_head = link;
    ctx->rx_held_tail = link;
    ctx->rx_held_n++;
}

/* What the link holds in receive buffers. */
static uint64_t held_by(const pure_link *link)
{
    return link->b ? (uint64_t)link->b->parse.body_cap + pure_rob_cap(&link->b->rob) : 0;
}

/* An owner displaced, or done with its message while its ring still holds bytes, keeps what it
 * holds: that stays counted against the owners' allowance (max_message_size past the budget)
 * until the link holds nothing in progress (pure_rxmem_settle). */
static void orphan(pure_link *link)
{
    if (link->b && !link->b->orphaned) {
        uint64_t h = held_by(link);
        link->b->orphaned = h > UINT32_MAX ? UINT32_MAX : (uint32_t)h;
        link->ctx->rx_orphaned += link->b->orphaned;
    }
}

static void unorphan(pure_link *link)
{
    link->ctx->rx_orphaned -= link->b->orphaned;
    link->b->orphaned = 0;
}

static void drop_owner(pure_ctx *ctx)
{
    ctx->rx_owner = NULL;
    if (ctx->rx_held_head)
        ctx->rx_wake = 1; /* the oldest held-back link may take over */
}

static int claim(pure_link *link, uint64_t now, int at_once)
{
    pure_ctx *ctx = link->ctx;
    pure_link *o = ctx->rx_owner;
    if (o == link)
        return 1;
    /* Only a link assembling a message may own, and only if that whole message fits, beside
     * what the owner and displaced owners hold, in max_message_size past the budget. */
    pure_busy *b = link->b;
    int vacant = at_once || !o || o->state != PURE_LS_OPEN ||
                 now - ctx->rx_owner_moved >= PURE_RX_OWNER_PATIENCE;
    uint64_t others = ctx->rx_orphaned - b->orphaned + (o ? held_by(o) : 0);
    if (vacant && b->parse.in_body && others + b->parse.body_len <= ctx->s.max_message_size) {
        if (o)
            orphan(o);
        if (o && o->state == PURE_LS_OPEN && needs(o))
            hold(o); /* displaced mid-message: it waits its turn, or nothing would wake it */
        unorphan(link);
        unhold(link);
        ctx->rx_owner = link;
        ctx->rx_owner_moved = now;
        return 1;
    }
    hold(link);
    return 0;
}

int pure_rxmem_claim(pure_link *link, uint64_t now)
{
    return claim(link, now, 0);
}

int pure_rxmem_claim_at_once(pure_link *link, uint64_t now)
{
    return claim(link, now, 1);
}

uint64_t pure_rxmem_ring_limit(const pure_link *link)
{
    const pure_ctx *ctx = link->ctx;
    uint64_t room = pure_rxmem_room(ctx);
    if (link != ctx->rx_owner)
        return room;
    /* the owner: what its allowance leaves beside its whole message (and its old ring, which
     * lives on during the copy) */
    uint64_t used = ctx->rx_orphaned + link->b->parse.body_len + pure_rob_cap(&link->b->rob);
    uint64_t allow = used < ctx->s.max_message_size ? ctx->s.max_message_size - used : 0;
    return allow > room ? allow : room;
}

int pure_rxmem_may_credit(pure_link *link, uint64_t now)
{
    const pure_ctx *ctx = link->ctx;
    if (ctx->guard.rx_memory < ctx->s.max_receive_memory || link == ctx->rx_owner || !needs(link))
        return 1;
    return pure_rxmem_claim(link, now);
}

void pure_rxmem_consumed(pure_link *link, uint64_t n, uint64_t now)
{
    if (n && link == link->ctx->rx_owner)
        link->ctx->rx_owner_moved = now;
}

void pure_rxmem_settle(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    pure_busy *b = link->b;
    if (b->parse.in_body)
        return;
    if (link == ctx->rx_owner) { /* its message is delivered */
        drop_owner(ctx);
        if (!pure_rob_empty(&b->rob))
            orphan(link); /* its ring still holds what came past the message */
    }
    if (!pure_rob_empty(&b->rob))
        return;
    /* Nothing in progress. Buffers kept for the next message would stay past the budget. */
    if (ctx->guard.rx_memory >= ctx->s.max_receive_memory) {
        pure_alloc a = pure_rxmem_alloc(ctx);
        pure_msgparse_shrink(&b->parse, &a);
        pure_rob_shrink(&b->rob, &a);
    }
    if (b->orphaned)
        unorphan(link);
}

void pure_rxmem_forget(pure_link *link)
{
    if (link->b) {
        unhold(link);
        unorphan(link);
    }
    if (link->ctx->rx_owner == link)
        drop_owner(link->ctx);
}

void pure_rxmem_wake_begin(pure_ctx *ctx, pure_rxmem_waking *w)
{
    ctx->rx_wake = 0;
    w->left = ctx->rx_held_n;
    w->promised = 0;
}

pure_link *pure_rxmem_wake_next(pure_ctx *ctx, pure_rxmem_waking *w)
{
    /* Each woken link may soon use a window's worth: wake the oldest while that fits (always at
     * least one, which takes ownership if it still cannot have memory). A link held back again
     * goes to the tail; no link is looked at twice. */
    if (w->promised && ctx->guard.rx_memory + w->promised >= ctx->s.max_receive_memory &&
        ctx->rx_owner)
        return NULL;
    if (w->left == 0 || !ctx->rx_held_head)
        return NULL;
    w->left--;
    pure_link *l = ctx->rx_held_head;
    unhold(l);
    w->promised += pure_credit_window(&l->credit);
    return l;
}

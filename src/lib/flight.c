/* SPDX-License-Identifier: MIT */
/* flight.c: the context-wide limit on bytes in flight. See flight.h. */
#include "flight.h"

#include "registry.h"
#include "state.h"

static void unlink_waiter(pure_ctx *ctx, pure_busy *b)
{
    if (b->flight_prev)
        b->flight_prev->b->flight_next = b->flight_next;
    else
        ctx->flight_head = b->flight_next;
    if (b->flight_next)
        b->flight_next->b->flight_prev = b->flight_prev;
    else
        ctx->flight_tail = b->flight_prev;
    b->flight_prev = b->flight_next = NULL;
    b->flight_waiting = 0;
}

void pure_flight_sent(pure_link *link, uint64_t size)
{
    uint64_t c = size + PURE_FLIGHT_PACKET_COST;
    link->b->flight_charge += c;
    link->ctx->flight += c;
}

void pure_flight_gone(pure_link *link, uint64_t size)
{
    /* Never more than the link's share: the sum stays exact whatever leaves flight unannounced
     * (the link's share goes whole in pure_flight_forget). */
    uint64_t c = size + PURE_FLIGHT_PACKET_COST;
    if (c > link->b->flight_charge)
        c = link->b->flight_charge;
    link->b->flight_charge -= c;
    link->ctx->flight -= c;
}

/* Queues the link: at the tail, or at the head if it was woken and is turned back (it keeps its
 * turn). */
static void wait(pure_ctx *ctx, pure_link *link, pure_busy *b)
{
    b->flight_waiting = 1;
    if (b->flight_woken) { /* turned back before its turn was used up */
        b->flight_prev = NULL;
        b->flight_next = ctx->flight_head;
        if (ctx->flight_head)
            ctx->flight_head->b->flight_prev = link;
        else
            ctx->flight_tail = link;
        ctx->flight_head = link;
        return;
    }
    b->flight_prev = ctx->flight_tail;
    b->flight_next = NULL;
    if (ctx->flight_tail)
        ctx->flight_tail->b->flight_next = link;
    else
        ctx->flight_head = link;
    ctx->flight_tail = link;
    ctx->guard.in_flight_waits++;
}

int pure_flight_allowed(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    pure_busy *b = link->b;
    if (ctx->max_in_flight == 0)
        return 1;
    if (b->flight_waiting)
        return 0; /* its turn comes through pure_flight_wake */
    /* Strictly first come, first served: with links waiting, one woken by its own ACK does not
     * take the room ahead of them (it did, and a few links sent while others waited seconds). */
    if (ctx->flight < ctx->max_in_flight && !ctx->flight_head)
        return 1;
    if (ctx->flight < ctx->max_in_flight && b->flight_woken) {
        b->flight_woken--; /* a turn is a few packets: links take turns, none sends a window */
        return 1;
    }
    wait(ctx, link, b);
    b->flight_woken = 0;
    return 0;
}

void pure_flight_turn_end(pure_link *link)
{
    if (link->b)
        link->b->flight_woken = 0;
}

void pure_flight_forget(pure_link *link)
{
    if (!link->b)
        return;
    if (link->b->flight_waiting)
        unlink_waiter(link->ctx, link->b);
    link->ctx->flight -= link->b->flight_charge;
    link->b->flight_charge = 0;
}

void pure_flight_wake(pure_ctx *ctx)
{
    uint64_t flight = ctx->flight;
    ctx->guard.in_flight = flight;
    if (flight > ctx->guard.in_flight_peak)
        ctx->guard.in_flight_peak = flight;
    while (ctx->flight_head && (ctx->max_in_flight == 0 || flight < ctx->max_in_flight)) {
        pure_link *l = ctx->flight_head;
        unlink_waiter(ctx, l->b);
        l->b->flight_woken = PURE_FLIGHT_TURN;
        pure_ctx_mark_pending(ctx, l);
        flight += PURE_FLIGHT_TURN * (l->mss + PURE_FLIGHT_PACKET_COST); /* what it may send */
    }
}

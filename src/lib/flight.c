/* SPDX-License-Identifier: MIT */
/* flight.c: the context-wide limit on bytes in flight. See flight.h. */
#include "flight.h"

#include "registry.h"
#include "state.h"

/* Keeps ctx->flight_links, the links among which the limit is shared (those with packets in
 * flight or held back), in step with the link's charge and wait. */
static void recount(pure_ctx *ctx, pure_busy *b)
{
    uint8_t c = b->flight_charge > 0 || b->flight_waiting || b->flight_held;
    if (c != b->flight_counted) {
        b->flight_counted = c;
        if (c)
            ctx->flight_links++;
        else
            ctx->flight_links--;
    }
}

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
    recount(ctx, b);
}

/* Is the link within its fair share of the limit (the limit over the links with packets in
 * flight or held back), with the sum not far past the limit? The shares sum to the limit; the
 * quarter beyond it covers links that took more while nobody was held back, and a share that
 * shrank as more links came. */
static int within_share(const pure_ctx *ctx, const pure_link *link, const pure_busy *b)
{
    uint64_t packet = (uint64_t)link->mss + PURE_FLIGHT_PACKET_COST;
    uint64_t max = ctx->max_in_flight;
    uint64_t links = ctx->flight_links + !b->flight_counted;
    return ctx->flight + packet <= max + max / 4 && b->flight_charge + packet <= max / links;
}

void pure_flight_sent(pure_link *link, uint64_t size)
{
    uint64_t c = size + PURE_FLIGHT_PACKET_COST;
    link->b->flight_charge += c;
    link->ctx->flight += c;
    recount(link->ctx, link->b);
}

void pure_flight_gone(pure_link *link, uint64_t size)
{
    /* Never more than the link's share: the sum stays exact whatever leaves flight unannounced
     * (the link's share goes whole in pure_flight_forget). */
    pure_busy *b = link->b;
    uint64_t c = size + PURE_FLIGHT_PACKET_COST;
    if (c > b->flight_charge)
        c = b->flight_charge;
    b->flight_charge -= c;
    link->ctx->flight -= c;
    /* A link held back above its share asks again once its own ACKs bring it within (while it
     * is in cache), or when it has nothing left in flight (then it may have to wait its turn). */
    if (b->flight_held && (b->flight_charge == 0 || within_share(link->ctx, link, b))) {
        b->flight_held = 0;
        pure_ctx_mark_pending(link->ctx, link);
    }
    recount(link->ctx, b);
}

/* Queues the link: at the tail, or at the head if it was woken and is turned back (it keeps its
 * turn). */
static void wait(pure_ctx *ctx, pure_link *link, pure_busy *b)
{
    b->flight_waiting = 1;
    recount(ctx, b);
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
    /* First come, first served while links wait with nothing in flight: one woken by its own
     * ACK does not take the room ahead of them beyond its share (it did, and a few links sent
     * while others waited seconds). */
    if (ctx->flight < ctx->max_in_flight && !ctx->flight_head)
        return 1;
    /* Within its fair share a link goes at once: it takes back the room its own ACKs just
     * freed, while its state is in cache, so that thousands of links each answering what just
     * arrived need no wake-ups. */
    if (within_share(ctx, link, b)) {
        b->flight_held = 0;
        return 1;
    }
    if (ctx->flight < ctx->max_in_flight && b->flight_woken) {
        b->flight_woken--; /* a turn is a few packets: links take turns, none sends a window */
        return 1;
    }
    b->flight_woken = 0;
    if (b->flight_charge > 0) {
        /* Above its share: held back until its own ACKs (pure_flight_gone) bring it within. It
         * takes no place in the queue, which is for links that have no ACK to wait for. */
        if (!b->flight_held)
            ctx->guard.in_flight_waits++;
        b->flight_held = 1;
        recount(ctx, b);
        return 0;
    }
    wait(ctx, link, b);
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
    link->b->flight_held = 0;
    recount(link->ctx, link->b);
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
        ctx->guard.in_flight_wakes++;
        flight += PURE_FLIGHT_TURN * (l->mss + PURE_FLIGHT_PACKET_COST); /* what it may send */
    }
}

/* SPDX-License-Identifier: MIT */
/* ctx_walk.c: the calls that walk every link of a context: pure_ctx_links (the application's
 * visitor), pure_ctx_shutdown (ending links at once) and pure_ctx_drain (a fleet's server sending
 * its links elsewhere). A link ended during the walk stays in the table until the walk is over
 * (pure_link_terminate leaves it to pure_link_release at the end of the call), so the table does
 * not move under the walk. */
#include "lifecycle.h"
#include "link.h"
#include "registry.h"

/* Ends a walk begun with ctx->depth++ and ctx->walking++: the links it ended leave the table. */
static void walk_end(pure_ctx *ctx)
{
    if (--ctx->walking == 0)
        for (pure_link *l = ctx->dead; l; l = l->dead_next)
            if (pure_ctx_table_find(ctx, l->local_index) == l)
                pure_ctx_table_remove(ctx, l);
    pure_link_end_call(ctx);
}

uint64_t pure_ctx_links(pure_ctx *ctx, int (*visit)(pure_link *link, void *user, void *arg),
                        void *arg)
{
    if (!ctx || !visit || ctx->freeing)
        return 0;
    /* While the walk runs, a link the visitor ends stays in the table (pure_link_terminate
     * leaves it to pure_link_release at the end of the call) and pure_connect is refused, so
     * the table does not move under the walk. */
    ctx->depth++;
    ctx->walking++;
    uint64_t n = 0;
    for (uint32_t i = 0; i < ctx->table.cap; i++) {
        pure_link *l = pure_table_at(&ctx->table, i);
        if (!l || l->closed_notified || l->state == PURE_LS_CLOSED ||
            (!l->initiator && !l->accepted))
            continue; /* gone, or a responder's link the application never accepted */
        n++;
        if (visit(l, l->user, arg) != 0)
            break;
    }
    walk_end(ctx);
    return n;
}

int pure_ctx_shutdown(pure_ctx *ctx, unsigned flags, uint64_t now)
{
    if (!ctx || (flags & ~(unsigned)(PURE_SHUTDOWN_ALL | PURE_SHUTDOWN_MOVED)))
        return PURE_EINVAL;
    if (ctx->freeing || ctx->depth) /* inside pure_ctx_free, or a callback */
        return PURE_ESTATE;
    /* As pure_ctx_links: the links ended here stay in the table until the walk is over. */
    ctx->depth++;
    ctx->walking++;
    ctx->now = now;
    for (uint32_t i = 0; i < ctx->table.cap; i++) {
        pure_link *l = pure_table_at(&ctx->table, i);
        if (!l || l->state == PURE_LS_CLOSING || l->state == PURE_LS_CLOSED)
            continue;
        if (l->close_requested) { /* the close it asked for, at once */
            if (flags & PURE_SHUTDOWN_CLOSES)
                pure_link_terminate(l, PURE_ECLOSED, l->close_code, l->b ? l->b->close_reason : "",
                                    1, now);
        } else if (flags & PURE_SHUTDOWN_OPEN) {
            if (flags & PURE_SHUTDOWN_MOVED)
                pure_link_terminate(l, PURE_ECLOSED, PURE_CLOSE_MOVED, "moved: go elsewhere", 1,
                                    now);
            else
                pure_link_terminate(l, PURE_ECLOSED, PURE_CLOSE_OK, "shutdown", 1, now);
        }
    }
    walk_end(ctx);
    return 0;
}

int pure_ctx_drain(pure_ctx *ctx, uint64_t now)
{
    if (!ctx)
        return PURE_EINVAL;
    if (ctx->freeing || ctx->depth)
        return PURE_ESTATE;
    ctx->drain = 1; /* from now on INITs get RESP status "moved" (handshake_resp.c) */
    /* As pure_ctx_shutdown: the links ended here stay in the table until the walk is over. */
    ctx->depth++;
    ctx->walking++;
    ctx->now = now;
    for (uint32_t i = 0; i < ctx->table.cap; i++) {
        pure_link *l = pure_table_at(&ctx->table, i);
        /* Only links this context accepted, open and not already closing. A handshake under way
         * (UNVALIDATED) is left to finish: dropped, its client would wait out a timeout (its RESP
         * may be on the way, and a resent INIT would be taken for a replay); confirmed, it closes
         * at once with "moved" (pure_hs_confirmed). */
        if (!l || l->initiator || l->close_requested || l->state != PURE_LS_OPEN)
            continue;
        pure_link_terminate(l, PURE_ECLOSED, PURE_CLOSE_MOVED, "moved: go elsewhere", 1, now);
    }
    walk_end(ctx);
    return 0;
}

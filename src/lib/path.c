/* SPDX-License-Identifier: MIT */
/* path.c: path validation by challenge and response (path.h). */
#include <string.h>

#include "cc.h"
#include "path.h"
#include "registry.h"

/* A new challenge for the address the link now answers at. Without randomness (the source
 * failed) the path simply stays unvalidated: sends there stay within the amplification limit. */
static void challenge(pure_link *link)
{
    pure_path *p = &link->b->path;
    if (pure_ctx_random(link->ctx, p->challenge, sizeof p->challenge) != 0)
        return;
    p->challenge_set = 1;
    p->challenge_pending = 1;
    pure_ctx_mark_pending(link->ctx, link);
}

void pure_path_on_packet(pure_link *link, const pure_addr *from, uint64_t pn, size_t n,
                         uint64_t now)
{
    pure_path *p = &link->b->path;
    if (!pure_addr_equal(from, &link->peer) && pn + 1 >= link->b->replay.top) {
        link->st.path_changes++;
        if (!link->path_unvalidated) { /* the address we leave was validated: remember it */
            p->prev = link->peer;
            p->has_prev = 1;
        }
        link->peer = *from;
        link->amp_received = 0;
        link->amp_sent = 0;
        if (p->has_prev && pure_addr_equal(from, &p->prev)) {
            link->path_unvalidated = 0; /* back to where the peer proved itself */
            p->challenge_set = 0;
            p->challenge_pending = 0;
        } else {
            link->path_unvalidated = 1;
            challenge(link);
        }
    }
    if (link->path_unvalidated && pure_addr_equal(from, &link->peer)) {
        link->amp_received += n; /* only what came from the address being answered counts */
        if (!p->challenge_pending && p->challenge_set) {
            p->challenge_pending = 1; /* the last one may be lost: ask again, within budget */
            pure_ctx_mark_pending(link->ctx, link);
        }
    }
    (void)now;
}

void pure_path_on_challenge(pure_link *link, const uint8_t data[PURE_PATH_DATA_LEN])
{
    pure_path *p = &link->b->path;
    memcpy(p->response, data, sizeof p->response);
    p->response_pending = 1;
    pure_ctx_mark_pending(link->ctx, link);
}

void pure_path_on_response(pure_link *link, const uint8_t data[PURE_PATH_DATA_LEN], uint64_t now)
{
    pure_path *p = &link->b->path;
    if (!link->path_unvalidated || !p->challenge_set ||
        memcmp(data, p->challenge, sizeof p->challenge) != 0)
        return; /* stale, or a guess */
    link->path_unvalidated = 0;
    p->challenge_set = 0;
    p->challenge_pending = 0;
    if (p->has_prev && !pure_addr_same_host(&p->prev, &link->peer)) {
        /* Another host: what the old path taught says nothing about this one (section 9.4). */
        pure_cc_reset(&link->b->cc, now);
        pure_rtt_init(&link->rtt, PURE_RTT_INITIAL);
        pure_pacer_path_reset(&link->b->pacer);
    }
    p->prev = link->peer;
    p->has_prev = 1;
}

int pure_path_put_frames(pure_link *link, pure_pkt *k)
{
    pure_path *p = &link->b->path;
    int put = 0;
    if (p->response_pending && pure_pkt_path(k, PURE_FRAME_PATH_RESPONSE, p->response) == 0) {
        p->response_pending = 0;
        put = 1;
    }
    if (p->challenge_pending && pure_pkt_path(k, PURE_FRAME_PATH_CHALLENGE, p->challenge) == 0) {
        p->challenge_pending = 0;
        put = 1;
    }
    return put;
}

/* SPDX-License-Identifier: MIT */
/* rekey.c: new transport keys inside an open link, with forward secrecy: a fresh X25519
 * exchange in one round trip, mixed into the link's chaining key.
 *
 *   A (starts)                                  B
 *   REKEY request {eA}           -------->      new keys from DH(eB, eA); rx[next] installed;
 *                                               replies while still sending in the old phase
 *                                <--------      REKEY reply {eB}
 *   new keys from DH(eA, eB); sends in the new phase at once
 *   packets in the new phase      -------->     B switches its own sending to the new phase
 *
 * ck' , _ = HKDF(ck, DH), then k1, k2 = HKDF(ck', "pure rekey"): the side that started sends with
 * k1. Packet numbers keep counting across phases, so nonces never repeat under a key. Both sides
 * may start at once: the link's initiator keeps its own request and, rather than answer the
 * peer's, sends its own again (the peer may have dropped it for want of memory); the responder
 * drops its own and answers. Each REKEY frame names the generation it creates (the
 * count of exchanges mixed into ck, plus one), so a late duplicate of an exchange already done is
 * recognised and ignored rather than mixed in twice. Ephemeral private keys are wiped as soon as
 * used.
 *
 * Limits (docs/crypto.md): a transmit key seals at most rekey_after_packets packets (2^23 by
 * default and at most, AES-128-GCM's confidentiality limit). The exchange starts at half of them
 * (or after rekey_after_time with data to send); a side whose key reaches its last packet before
 * the exchange completes closes the link with PURE_ECRYPTO, that last packet its CLOSE. The
 * receive key a switch retires is wiped three probe timeouts after the first packet under its
 * successor (keys.c). */
#include <string.h>

#include "link_chan.h"
#include "rekey.h"
#include "keys.h"
#include "lifecycle.h"
#include "registry.h"
#include "varint.h"

/* How long data waits in a key's last quarter for the exchange (pure_rekey_holds_data), in
 * probe timeouts: the request is asked again each one, so a reply lost that many times over (3%
 * loss, a 256-packet key: three in a row in one exchange of the soak's 50,000) runs the key out. */
#define PURE_REKEY_HOLD_PTOS 8

enum {
    RK_REQUESTED = 1,
    RK_ANSWERED = 2
};

typedef struct pure_rekey {
    uint64_t started; /* when this side asked (RK_REQUESTED) or answered (RK_ANSWERED) */
    uint64_t sent_at; /* when the request last went out (RK_REQUESTED) */
    uint8_t state;
    uint8_t send_pending;
    uint8_t priv[PURE_DH_LEN]; /* our ephemeral (A, until the reply comes) */
    uint8_t pub[PURE_DH_LEN];  /* what our REKEY frame carries */
    pure_dir_keys tx_next;     /* B: the keys it sends with once A has switched */
} pure_rekey;

int pure_rekey_due(const pure_link *link, uint64_t now)
{
    const pure_settings *s = &link->ctx->s;
    if (link->state != PURE_LS_OPEN)
        return 0;
    /* A key seals at most rekey_after_packets packets (link_send.c stops it there); its
     * successor is sought from half of them (rekey.h) */
    if (pure_rekey_half_spent(link))
        return 1;
    /* By age, only while there is data to send: a link that only sends keepalives or ACKs keeps
     * its keys, so an idle link costs exactly one packet per keepalive interval. */
    return (link->send_next < link->sb.end || pure_link_chan_has_data(link)) &&
           now - link->keys_time >= s->rekey_after_time;
}

int pure_rekey_send_pending(const pure_link *link)
{
    return link->rk && link->rk->send_pending;
}

static pure_rekey *rk_new(pure_link *link)
{
    pure_rekey *rk = pure_mem_alloc(&link->ctx->alloc, sizeof *rk);
    if (rk)
        memset(rk, 0, sizeof *rk);
    link->rk = rk;
    return rk;
}

void pure_rekey_free(pure_link *link)
{
    pure_rekey *rk = link->rk;
    if (!rk)
        return;
    pure_keys_wipe_dir(link->ctx, &rk->tx_next);
    pure_wipe(rk, sizeof *rk);
    pure_mem_free(&link->ctx->alloc, rk, sizeof *rk);
    link->rk = NULL;
}

/* Mixes dh into the chaining key and derives the next generation's two keys: out[0] is what the
 * starting side sends with. */
static void next_keys(pure_link *link, const uint8_t dh[PURE_DH_LEN], uint8_t k1[32],
                      uint8_t k2[32])
{
    static const char label[] = "pure rekey";
    uint8_t ck[PURE_HASH_LEN], unused[PURE_HASH_LEN];
    pure_hkdf2(link->ctx->crypto, ck, unused, link->ck, dh, PURE_DH_LEN);
    pure_hkdf2(link->ctx->crypto, k1, k2, ck, (const uint8_t *)label, sizeof label - 1);
    memcpy(link->ck, ck, sizeof ck);
    link->ck_gen++;
    pure_wipe(ck, sizeof ck);
    pure_wipe(unused, sizeof unused);
}

int pure_rekey_start(pure_link *link, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    if (link->rk)
        return 0;
    pure_rekey *rk = rk_new(link);
    if (!rk)
        return PURE_ENOMEM;
    if (pure_ctx_random(ctx, rk->priv, sizeof rk->priv) != 0 ||
        ctx->crypto->dh_public(rk->pub, rk->priv) != 0) {
        pure_rekey_free(link);
        return PURE_ECRYPTO;
    }
    rk->state = RK_REQUESTED;
    rk->started = now;
    rk->send_pending = 1;
    pure_ctx_mark_pending(ctx, link);
    return 0;
}

uint64_t pure_rekey_holds_data(pure_link *link, uint64_t now)
{
    pure_rekey *rk = link->rk;
    if (!rk || !pure_rekey_last_quarter(link))
        return 0;
    uint64_t pto = pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
    uint64_t until = rk->started + PURE_REKEY_HOLD_PTOS * pto;
    if (now >= until)
        return 0;
    /* B, which answered and sends under the old keys until the starter's first packet under
     * the new ones arrives (pure_rekey_on_phase): a round trip, in which a fast sender would
     * spend its key's last quarter and close the link (as when both sides started at once and
     * this one, the responder, dropped its own request to answer). */
    if (rk->state == RK_ANSWERED)
        return until;
    /* No answer a probe timeout after the request went: ask again. The request may have been
     * acknowledged and the reply lost, which the responder resends only when asked again (its
     * own probe timeout may be far off: a receiver's RTT estimate has few samples). */
    uint64_t again = rk->sent_at + pto;
    if (!rk->send_pending && now >= again) {
        rk->send_pending = 1;
        again = now + pto;
    }
    return again < until ? again : until;
}

static void switched(pure_link *link, uint64_t now)
{
    link->key_phase ^= 1;
    link->keys_time = now;
    link->keys_packets = 0;
    link->st.rekeys++;
    pure_keys_retire_wait(link); /* the receive key of the old phase is now the previous one */
}

/* A: the peer's answer to our request (anything else, a duplicate, is ignored). */
static void on_reply(pure_link *link, uint32_t gen, const uint8_t *peer_pub, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    pure_rekey *rk = link->rk;
    uint8_t dh[PURE_DH_LEN], k1[32], k2[32];
    if (!rk || rk->state != RK_REQUESTED || gen != link->ck_gen + 1)
        return;
    if (ctx->crypto->dh(dh, rk->priv, peer_pub) != 0) {
        pure_wipe(dh, sizeof dh);
        pure_link_terminate(link, PURE_ECRYPTO, PURE_CLOSE_PROTOCOL, "bad rekey", 1, now);
        return;
    }
    next_keys(link, dh, k1, k2);
    int rc = pure_keys_derive_rx(link, link->key_phase ^ 1, k2);
    if (rc == 0)
        rc = pure_keys_derive(ctx, &link->tx, k1);
    pure_wipe(dh, sizeof dh);
    pure_wipe(k1, sizeof k1);
    pure_wipe(k2, sizeof k2);
    pure_rekey_free(link);
    if (rc != 0) {
        pure_link_terminate(link, rc, PURE_CLOSE_PROTOCOL, "rekey failed", 0, now);
        return;
    }
    switched(link, now);
    /* A packet under the new keys at once, one the peer answers: seeing it, the peer moves its
     * sending over, and its answer under the new key starts the retirement of our old receive
     * key (keys.c), even on a link with nothing else to say. */
    link->ping_pending = 1;
    pure_ctx_mark_pending(ctx, link);
}

/* B: the peer's request: answer it with our ephemeral key, ready to receive under the next
 * keys (we switch sending when the peer does, pure_rekey_on_phase). */
static void on_request(pure_link *link, uint32_t gen, const uint8_t *peer_pub, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    pure_rekey *rk = link->rk;
    uint8_t dh[PURE_DH_LEN], k1[32], k2[32];
    if (rk && rk->state == RK_ANSWERED) {
        if (gen == link->ck_gen) { /* our reply was lost: send it again, now */
            rk->send_pending = 1;
            rk->started = now; /* and hold data while the peer is still asking */
            pure_ctx_mark_pending(ctx, link);
        }
        return;
    }
    if (gen != link->ck_gen + 1)
        return; /* a stale duplicate of an exchange already done */
    if (rk && rk->state == RK_REQUESTED) {
        if (link->initiator) { /* both started: the initiator's request wins */
            /* Say it again: the peer may have dropped ours (no memory to answer it, "the peer
             * will ask again") and is now asking itself, which we never answer. A peer that
             * has answered ours answers again (a duplicate request, on_request above). */
            rk->send_pending = 1;
            pure_ctx_mark_pending(ctx, link);
            return;
        }
        pure_rekey_free(link);
    }
    rk = rk_new(link);
    if (!rk)
        return; /* the peer will ask again */
    uint8_t priv[PURE_DH_LEN];
    int rc = pure_ctx_random(ctx, priv, sizeof priv);
    if (rc == 0)
        rc = ctx->crypto->dh_public(rk->pub, priv);
    if (rc == 0)
        rc = ctx->crypto->dh(dh, priv, peer_pub);
    pure_wipe(priv, sizeof priv);
    if (rc != 0) {
        pure_wipe(dh, sizeof dh);
        pure_rekey_free(link);
        pure_link_terminate(link, PURE_ECRYPTO, PURE_CLOSE_PROTOCOL, "bad rekey", 1, now);
        return;
    }
    next_keys(link, dh, k1, k2);
    rc = pure_keys_derive_rx(link, link->key_phase ^ 1, k1);
    if (rc == 0)
        rc = pure_keys_derive(ctx, &rk->tx_next, k2);
    pure_wipe(dh, sizeof dh);
    pure_wipe(k1, sizeof k1);
    pure_wipe(k2, sizeof k2);
    if (rc != 0) {
        pure_rekey_free(link);
        pure_link_terminate(link, rc, PURE_CLOSE_PROTOCOL, "rekey failed", 0, now);
        return;
    }
    rk->state = RK_ANSWERED;
    rk->started = now;
    rk->send_pending = 1;
    pure_ctx_mark_pending(ctx, link);
}

void pure_rekey_on_frame(pure_link *link, const uint8_t *frame, uint64_t now)
{
    uint32_t gen = pure_get_u32be(frame + 1);
    if (frame[0] == 1)
        on_reply(link, gen, frame + 5, now);
    else
        on_request(link, gen, frame + 5, now);
}

void pure_rekey_on_phase(pure_link *link, uint8_t phase, uint64_t now)
{
    pure_rekey *rk = link->rk;
    if (!rk || rk->state != RK_ANSWERED || phase != (link->key_phase ^ 1))
        return;
    /* B: the starter sends under the new keys, so it has them: move our sending over. */
    pure_keys_wipe_dir(link->ctx, &link->tx);
    link->tx = rk->tx_next;
    memset(&rk->tx_next, 0, sizeof rk->tx_next); /* moved, not copied: do not free it twice */
    pure_rekey_free(link);
    switched(link, now);
    pure_keys_retire_later(link, now); /* this packet was the peer's first under the new key */
    /* Data held for the switch (pure_rekey_holds_data) goes now: through the pace timer, made
     * due, not cleared (a retry for memory may be armed on it, nomem.h). */
    if (link->pace_at > now)
        link->pace_at = now;
    pure_ctx_mark_pending(link->ctx, link);
}

void pure_rekey_on_lost(pure_link *link)
{
    if (link->rk)
        link->rk->send_pending = 1;
}

int pure_rekey_put_frame(pure_link *link, pure_pkt *k)
{
    pure_rekey *rk = link->rk;
    if (!rk || !rk->send_pending)
        return 0;
    uint8_t f[2 + 4 + PURE_DH_LEN];
    f[0] = PURE_FRAME_REKEY;
    f[1] = rk->state == RK_ANSWERED ? 1 : 0;
    /* a request creates generation ck_gen + 1; a reply confirms the one it just made */
    pure_put_u32be(f + 2, rk->state == RK_ANSWERED ? link->ck_gen : link->ck_gen + 1);
    memcpy(f + 6, rk->pub, PURE_DH_LEN);
    if (pure_pkt_bytes(k, f, sizeof f) != 0)
        return 0;
    rk->send_pending = 0;
    rk->sent_at = link->ctx->now;
    return 1;
}

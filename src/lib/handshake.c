/* SPDX-License-Identifier: MIT */
/* handshake.c: the initiator's side of the handshake on top of Noise IK: its INIT (Noise message
 * 1, carrying a timestamp and the service name, with mac1 and mac2), the queue that keeps at most
 * PURE_HS_IN_FLIGHT handshakes under way, retries, and what it accepts back: RESP (message 2,
 * accept or refusal), a COOKIE reply sealed to its INIT, a REJECT hint echoing its INIT's mac1,
 * and the other hints that end a handshake early (ICMP errors, junk from the peer's address).
 * The responder's side is handshake_resp.c. */
#include <string.h>

#include "admit.h"
#include "handshake.h"
#include "keys.h"
#include "lifecycle.h"
#include "link_chan.h"
#include "registry.h"
#include "timers.h"
#include "tparams.h"
#include "varint.h"

#define HS_FIRST_RETRY 300000000ull /* 300 ms, doubling per retry */
#define HS_MAX_RETRY 1000000000ull  /* up to 1 s apart */

/* The INIT's timestamp: the wall clock in ns, strictly above the last one this context sent, so
 * every INIT a context makes is fresher than the one before even if the clock stands still. */
static uint64_t next_timestamp(pure_ctx *ctx)
{
    uint64_t t = pure_ctx_realtime(ctx);
    if (t <= ctx->last_init_ts)
        t = ctx->last_init_ts + 1;
    ctx->last_init_ts = t;
    return t;
}

/* Builds the INIT (an ephemeral key and a timestamp) into hs->init. Retries resend it as it
 * is; mac2 stays zero until a COOKIE reply gives a cookie. */
static int build_init(pure_link *link)
{
    pure_ctx *ctx = link->ctx;
    pure_hs *hs = link->hs;
    size_t slen = strlen(hs->service);
    pure_noise_wipe(&hs->noise);
    int rc = pure_noise_init_keys(&hs->noise, ctx->crypto, 1, (const uint8_t *)PURE_PROLOGUE,
                                  strlen(PURE_PROLOGUE), ctx->s.private_key, ctx->public_key,
                                  link->peer_key);
    if (rc)
        return rc;
    pure_noise_set_ss_cache(&hs->noise, pure_ctx_sscache(ctx));
    uint8_t e[PURE_DH_LEN];
    if (pure_ctx_random(ctx, e, sizeof e))
        return PURE_ECRYPTO;
    pure_noise_set_ephemeral(&hs->noise, e);
    pure_wipe(e, sizeof e);

    /* timestamp · service length · service · our transport parameters (tparams.h) */
    uint8_t payload[PURE_INIT_TS_LEN + 1 + PURE_SERVICE_MAX + PURE_TPARAMS_ROOM];
    pure_put_u64be(payload, next_timestamp(ctx));
    payload[PURE_INIT_TS_LEN] = (uint8_t)slen;
    memcpy(payload + PURE_INIT_TS_LEN + 1, hs->service, slen);
    size_t plen = PURE_INIT_TS_LEN + 1 + slen;
    plen += pure_tparams_write_local(ctx, payload + plen);
    /* Another version (a test's): a versioned INIT, its fixed fields before the Noise message. */
    uint32_t version = pure_ctx_wire_version(ctx);
    size_t fixed = version == PURE_PROTOCOL_VERSION ? PURE_INIT_FIXED : PURE_INIT_V_FIXED;
    uint8_t *p = hs->init;
    if (version == PURE_PROTOCOL_VERSION) {
        pure_wire_put_header(p, PURE_PKT_INIT, link->local_index);
    } else {
        p[0] = PURE_PKT_INIT_V;
        pure_put_u32be(p + 1, version);
        pure_put_u32le(p + 5, link->local_index);
    }
    size_t mlen = 0;
    uint64_t hits = ctx->ssc ? ctx->ssc->hits : 0;
    rc = pure_noise_write_msg1(&hs->noise, payload, plen, p + fixed,
                               sizeof hs->init - fixed - 2 * PURE_MAC_LEN, &mlen);
    pure_wipe(payload, sizeof payload);
    if (rc)
        return rc;
    ctx->guard.dh_ops += 3 - (ctx->ssc ? ctx->ssc->hits - hits : 0); /* e, es, ss unless cached */
    hs->init_len = (uint16_t)(fixed + mlen + 2 * PURE_MAC_LEN);
    uint8_t key[PURE_HASH_LEN];
    pure_admit_mac1_key(ctx->crypto, link->peer_key, key);
    pure_admit_mac(ctx->crypto, key, sizeof key, p, hs->init_len - 2 * PURE_MAC_LEN,
                   p + hs->init_len - 2 * PURE_MAC_LEN);
    memset(p + hs->init_len - PURE_MAC_LEN, 0, PURE_MAC_LEN); /* mac2: no cookie yet */
    return 0;
}

static void unqueue(pure_ctx *ctx, pure_link *link)
{
    pure_hs *hs = link->hs;
    if (hs->queue_prev)
        hs->queue_prev->hs->queue_next = hs->queue_next;
    else
        ctx->hs_queue_head = hs->queue_next;
    if (hs->queue_next)
        hs->queue_next->hs->queue_prev = hs->queue_prev;
    else
        ctx->hs_queue_tail = hs->queue_prev;
    hs->queue_prev = hs->queue_next = NULL;
    hs->queued = 0;
}

/* Builds the INIT and sends it: one of the context's PURE_HS_IN_FLIGHT handshakes under way. */
static int activate(pure_link *link, uint64_t now)
{
    pure_hs *hs = link->hs;
    int rc = build_init(link);
    if (rc)
        return rc;
    hs->in_flight = 1;
    link->ctx->hs_in_flight++;
    hs->flight_next = link->ctx->hs_flight_head;
    if (hs->flight_next)
        hs->flight_next->hs->flight_prev = link;
    link->ctx->hs_flight_head = link;
    hs->started = now;
    hs->retry_at = now + HS_FIRST_RETRY;
    hs->send_pending = 1;
    pure_ctx_mark_pending(link->ctx, link);
    return 0;
}

int pure_hs_start(pure_link *link, const uint8_t peer_key[PURE_KEY_LEN], const char *service,
                  uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    size_t slen = strlen(service);
    pure_hs *hs = pure_mem_alloc(&ctx->alloc, sizeof *hs);
    if (!hs)
        return PURE_ENOMEM;
    memset(hs, 0, sizeof *hs);
    link->hs = hs;
    memcpy(hs->service, service, slen);
    memcpy(link->peer_key, peer_key, PURE_KEY_LEN);
    ctx->st.handshakes_started++;
    if (ctx->hs_in_flight < PURE_HS_IN_FLIGHT)
        return activate(link, now);
    /* queued: no INIT (its timestamp is taken when it goes), no timer */
    hs->queued = 1;
    hs->retry_at = UINT64_MAX;
    hs->queue_prev = ctx->hs_queue_tail;
    if (ctx->hs_queue_tail)
        ctx->hs_queue_tail->hs->queue_next = link;
    else
        ctx->hs_queue_head = link;
    ctx->hs_queue_tail = link;
    return 0;
}

/* Takes queued handshakes out while fewer than PURE_HS_IN_FLIGHT are under way. */
static void activate_queued(pure_ctx *ctx, uint64_t now)
{
    while (ctx->hs_queue_head && ctx->hs_in_flight < PURE_HS_IN_FLIGHT && !ctx->freeing) {
        pure_link *l = ctx->hs_queue_head;
        unqueue(ctx, l);
        if (activate(l, now) != 0)
            pure_link_terminate(l, PURE_ECRYPTO, 0, NULL, 0, now);
        else
            pure_timers_update(l, now);
    }
}

void pure_hs_free(pure_link *link)
{
    pure_ctx_hs_remove(link->ctx, link);
    if (link->resp) {
        pure_mem_free(&link->ctx->alloc, link->resp, PURE_RESP_CAP);
        link->resp = NULL;
        link->resp_len = 0;
    }
    if (!link->hs)
        return;
    pure_ctx *ctx = link->ctx;
    if (link->hs->queued)
        unqueue(ctx, link);
    if (link->hs->in_flight) {
        pure_hs *hs = link->hs;
        if (hs->flight_prev)
            hs->flight_prev->hs->flight_next = hs->flight_next;
        else
            ctx->hs_flight_head = hs->flight_next;
        if (hs->flight_next)
            hs->flight_next->hs->flight_prev = hs->flight_prev;
        ctx->hs_in_flight--;
        link->hs->in_flight = 0;
        activate_queued(ctx, ctx->now);
    }
    pure_noise_wipe(&link->hs->noise);
    pure_wipe(link->hs, sizeof *link->hs);
    pure_mem_free(&link->ctx->alloc, link->hs, sizeof *link->hs);
    link->hs = NULL;
}

static void hint(pure_link *link, int err, int kind, uint64_t now);
static void hint_clear(pure_hs *hs);

/* Ends the handshake with err; PURE_EUNREACH carries its kind (peer_code) and a text. */
static void fail(pure_link *link, int err, int kind, uint64_t now)
{
    static const char *const texts[] = {
        "",
        "port unreachable",
        "host unreachable",
        "administratively prohibited",
        "no route from this host",
        "address family not reachable from this socket",
    };
    const char *reason = NULL;
    if (err == PURE_EUNREACH) {
        link->close_code = (uint64_t)kind;
        reason = texts[kind];
    } else if (err == PURE_EVERSION) {
        link->close_code = link->hs->hint_version; /* the newest version the responder speaks */
        reason = "the peer speaks another protocol version";
    }
    pure_link_terminate(link, err, link->close_code, reason, 0, now);
}

void pure_hs_timeout(pure_link *link, uint64_t now)
{
    pure_hs *hs = link->hs;
    if (!hs || now < hs->retry_at)
        return;
    if (hs->hint_err && now >= hs->hint_deadline) {
        fail(link, hs->hint_err, hs->hint_kind, now);
        return;
    }
    if (now - hs->started >= link->ctx->s.handshake_timeout) {
        fail(link, hs->hint_err ? hs->hint_err : PURE_ETIMEDOUT, hs->hint_kind, now);
        return;
    }
    hs->retries++;
    /* 300 ms, 600 ms, then every second: a handshake is small, and the budget
     * (handshake_timeout) should buy many tries on a lossy path. */
    uint64_t backoff = HS_FIRST_RETRY << (hs->retries < 2 ? hs->retries : 2);
    if (backoff > HS_MAX_RETRY)
        backoff = HS_MAX_RETRY;
    hs->retry_at = now + backoff;
    if (hs->hint_err) { /* under a hint: every quarter of its grace, until it runs out */
        hs->retry_at = now + hs->hint_step;
        if (hs->retry_at > hs->hint_deadline)
            hs->retry_at = hs->hint_deadline;
    }
    /* the error is due at handshake_timeout, not at the retry after it */
    if (hs->retry_at > hs->started + link->ctx->s.handshake_timeout)
        hs->retry_at = hs->started + link->ctx->s.handshake_timeout;
    hs->send_pending = 1; /* the same INIT: a responder that made a link answers from it */
    pure_ctx_mark_pending(link->ctx, link);
}

/* The RESP came: the handshake's round trip is the link's first RTT sample, counted from the
 * start of the handshake (its first INIT, or earlier if it was queued), and its state goes. */
static void hs_done(pure_link *link, uint64_t now)
{
    pure_rtt_handshake_sample(&link->rtt, now - link->hs->started, link->ctx->s.max_ack_delay);
    pure_hs_free(link);
}

int pure_hs_on_resp(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n, uint64_t now)
{
    if (n < PURE_RESP_MIN || n > PURE_RESP_MAX)
        return PURE_EPROTO;
    uint32_t sender = pure_wire_index(d), receiver = pure_wire_resp_receiver(d);
    pure_link *link = pure_ctx_table_find(ctx, receiver);
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    /* A forged RESP leaves the handshake as it was (Noise reads on a scratch copy). */
    pure_noise *noise = &link->hs->noise;
    uint8_t payload[PURE_RESP_PAYLOAD + PURE_TPARAMS_ROOM];
    size_t plen = 0;
    ctx->guard.dh_ops += 2; /* ee, se */
    int rc = pure_noise_read_msg2(noise, d + PURE_RESP_FIXED, n - PURE_RESP_FIXED, payload,
                                  sizeof payload, &plen);
    if (rc != 0 || plen < PURE_RESP_PAYLOAD) {
        ctx->st.dropped_auth++;
        if (pure_addr_equal(from, &link->peer))
            hint_clear(link->hs); /* a RESP for our INIT, damaged: the responder took the INIT */
        return rc == 0 ? PURE_EPROTO : PURE_ECRYPTO;
    }
    uint8_t status = payload[0];
    /* The header's sender index is not authenticated; the payload's copy is, and is the one
     * used (a changed header once sent every packet of the link to a link that did not exist,
     * and the link died at its idle timeout). */
    sender = pure_get_u32le(payload + 1);
    if (status != PURE_RESP_OK) {
        ctx->st.handshakes_refused++;
        pure_link_terminate(link,
                            status == PURE_RESP_NO_SERVICE    ? PURE_EREFUSED
                            : status == PURE_RESP_NOT_ALLOWED ? PURE_EACCES
                            : status == PURE_RESP_MOVED       ? PURE_EMOVED
                                                              : PURE_EPROTO,
                            0,
                            status == PURE_RESP_BAD_PARAMS
                                ? "the responder could not parse our transport parameters"
                                : NULL,
                            0, now);
        return PURE_ECLOSED; /* on_closed has run, with the reason */
    }
    /* The responder's transport parameters: none from a responder built before them (or one
     * answering an INIT that had none); malformed ones end the handshake here. The responder's
     * half-open link then expires unconfirmed, as for an initiator that went away. */
    pure_tparams tp;
    if (pure_tparams_decode(payload + PURE_RESP_PAYLOAD, plen - PURE_RESP_PAYLOAD, &tp) != 0) {
        pure_wipe(payload, sizeof payload);
        pure_link_terminate(link, PURE_EPROTO, 0, "malformed transport parameters from the peer", 0,
                            now);
        return PURE_ECLOSED;
    }
    pure_tparams_store(link, &tp, plen > PURE_RESP_PAYLOAD);
    uint8_t k_send[32], k_recv[32], h[32];
    rc = pure_noise_split(noise, k_send, k_recv, link->ck, h);
    if (rc == 0)
        rc = pure_keys_install(link, k_send, k_recv);
    pure_wipe(k_send, 32);
    pure_wipe(k_recv, 32);
    if (rc != 0) {
        pure_link_terminate(link, PURE_ECRYPTO, 0, NULL, 0, now);
        return PURE_ECLOSED; /* on_closed has run, with PURE_ECRYPTO */
    }
    link->remote_index = sender;
    link->peer = *from;
    hs_done(link, now);
    /* The first packet from us proves to the responder that we hold the keys: send one now even
     * with nothing queued. */
    link->ping_pending = 1;
    pure_link_open(link, now);
    if (link->state == PURE_LS_OPEN && pure_link_chan_peer_known(link) != 0) {
        /* messages wait on a channel the peer does not take: they can never go */
        pure_link_terminate(link, PURE_EINVAL, PURE_CLOSE_OK,
                            "sent on a channel above the peer's max_channels", 1, now);
        return PURE_ECLOSED;
    }
    if (link->state == PURE_LS_OPEN && ctx->cb.on_established)
        ctx->cb.on_established(link, link->user);
    return 0;
}

int pure_hs_on_cookie(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                      uint64_t now)
{
    (void)now;
    if (n != PURE_COOKIE_PKT)
        return PURE_EPROTO;
    pure_link *link = pure_ctx_table_find(ctx, pure_wire_index(d));
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    /* Only from where the INIT went, and only sealed to this INIT's mac1: anyone else's COOKIE
     * (or one for an earlier INIT) is dropped and the handshake goes on as it was. */
    pure_hs *hs = link->hs;
    uint8_t *mac1 = hs->init + hs->init_len - 2 * PURE_MAC_LEN;
    uint8_t key[PURE_HASH_LEN], cookie[PURE_COOKIE_LEN];
    pure_admit_cookie_key(ctx->crypto, link->peer_key, key);
    if (!pure_addr_equal(from, &link->peer) ||
        pure_admit_cookie_open(ctx->crypto, key, mac1, d + PURE_WIRE_SECOND_AT, cookie) != 0) {
        ctx->guard.cookie_replies_bad++;
        ctx->st.dropped_auth++;
        return PURE_ECRYPTO;
    }
    /* mac2 = MAC(cookie, INIT up to mac2); the same INIT goes again at once */
    pure_admit_mac(ctx->crypto, cookie, sizeof cookie, hs->init, hs->init_len - PURE_MAC_LEN,
                   hs->init + hs->init_len - PURE_MAC_LEN);
    pure_wipe(cookie, sizeof cookie);
    hint_clear(hs); /* only the holder of the key we dialled can seal a cookie to our mac1 */
    hs->send_pending = 1;
    pure_ctx_mark_pending(ctx, link);
    return 0;
}

int pure_hs_on_reject(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                      uint64_t now)
{
    (void)now;
    if (n != PURE_REJECT_PKT)
        return PURE_EPROTO;
    pure_link *link = pure_ctx_table_find(ctx, pure_wire_index(d));
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    /* A hint, believed only if it comes from where the INIT went and echoes its mac1. */
    pure_hs *hs = link->hs;
    if (!pure_addr_equal(from, &link->peer) ||
        !pure_admit_mac_equal(d + PURE_WIRE_SECOND_AT,
                              hs->init + hs->init_len - 2 * PURE_MAC_LEN)) {
        ctx->guard.rejects_bad++;
        ctx->st.dropped_auth++;
        return PURE_ECRYPTO;
    }
    hint(link, PURE_EKEY, 0, now);
    return 0;
}

int pure_hs_on_version(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                       uint64_t now)
{
    if (n < PURE_VERSION_FIXED + 4 || (n - PURE_VERSION_FIXED) % 4 != 0 ||
        (n - PURE_VERSION_FIXED) / 4 > PURE_VERSION_MAX_LIST)
        return PURE_EPROTO;
    pure_link *link = pure_ctx_table_find(ctx, pure_wire_index(d));
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    /* Believed only from where the INIT went and echoing the 16 bytes after its sender index
     * (the start of its ephemeral key): an off-path sender cannot end a handshake with one. A
     * reply that lists our own version is stale or forged (QUIC ignores such a Version
     * Negotiation too): a responder speaking it would have answered the INIT. */
    pure_hs *hs = link->hs;
    size_t echo_at = (hs->init[0] == PURE_PKT_INIT ? PURE_INIT_FIXED : PURE_INIT_V_FIXED);
    uint32_t ours = pure_ctx_wire_version(ctx), best = 0;
    int lists_ours = 0;
    for (size_t at = PURE_VERSION_FIXED; at < n; at += 4) {
        uint32_t v = pure_get_u32be(d + at);
        lists_ours |= v == ours;
        if (v > best)
            best = v;
    }
    if (!pure_addr_equal(from, &link->peer) || !hs->inits_sent ||
        memcmp(d + PURE_WIRE_SECOND_AT, hs->init + echo_at, PURE_VERSION_ECHO_LEN) != 0 ||
        lists_ours) {
        ctx->guard.versions_bad++;
        ctx->st.dropped_auth++;
        return PURE_ECRYPTO;
    }
    hs->hint_version = best;
    hint(link, PURE_EVERSION, 0, now);
    return 0;
}

/* ---- failing fast: hints that the handshake cannot succeed (docs/protocol.md, "Failing fast") */

/* A hint that the handshake failed with err. The first one arms the grace: the larger of
 * PURE_HS_HINT_GRACE_MIN and twice the time from the first INIT to the hint (so a far responder's
 * answer to a resend still counts), with the INIT resent every quarter of it; the handshake ends
 * with err when the grace runs out with no RESP. More hints change nothing: a second REJECT is not
 * proof either, since a path that corrupts one INIT beyond its UDP checksum gets a REJECT for each
 * such copy from the right responder too (the simulator's 30% handshake corruption made two in a
 * row 9% likely). A RESP that reaches the link but fails to open, or a good COOKIE reply, says the
 * responder holds the key: it clears the hint (pure_hs_hint_clear). */
static void hint(pure_link *link, int err, int kind, uint64_t now)
{
    pure_hs *hs = link->hs;
    if (hs->hint_err)
        return;
    hs->hint_err = err;
    hs->hint_kind = (uint8_t)kind;
    uint64_t grace = 2 * (now - hs->started);
    if (grace < PURE_HS_HINT_GRACE_MIN)
        grace = PURE_HS_HINT_GRACE_MIN;
    hs->hint_step = grace / 4;
    hs->hint_deadline = now + grace;
    hs->retry_at = now + hs->hint_step;
    if (hs->retry_at > hs->started + link->ctx->s.handshake_timeout)
        hs->retry_at = hs->started + link->ctx->s.handshake_timeout; /* the budget still ends it */
    /* No INIT at once: a forged hint must not make the client send. The first resend comes from
     * the timer, a quarter of the grace later (attack_netns counts what is not a timer's). */
    pure_timers_update(link, now);
}

/* Evidence that the responder holds the key we dialled: a hint before it was wrong (a REJECT for
 * a corrupted copy, say). The handshake goes on as if it had never come. */
static void hint_clear(pure_hs *hs)
{
    hs->hint_err = 0;
    hs->hint_kind = 0;
}

/* A handshake under way to `to` whose INIT has gone: what a hint by address may concern. */
static int hint_applies(const pure_link *l, const pure_addr *to)
{
    return l->state == PURE_LS_HANDSHAKE && l->hs->inits_sent && pure_addr_equal(&l->peer, to);
}

/* The INIT's first bytes an ICMP error must quote to prove it saw the INIT: type, our random
 * index and the ephemeral public key (mac2 at the end changes with a cookie; these never do). */
#define QUOTE_PROOF (PURE_INIT_FIXED + PURE_DH_LEN)

/* Links that end stay on the flight list, CLOSED, until the public call under way returns: the
 * walks below go on past them. */
int pure_hs_unreachable(pure_ctx *ctx, const pure_addr *addr, int kind, const uint8_t *quoted,
                        size_t quoted_len, uint64_t now)
{
    int n = 0;
    for (pure_link *l = ctx->hs_flight_head; l; l = l->hs->flight_next) {
        if (!hint_applies(l, addr))
            continue;
        pure_hs *hs = l->hs;
        if (kind == PURE_UNREACH_LOCAL || kind == PURE_UNREACH_FAMILY) {
            fail(l, PURE_EUNREACH, kind, now); /* this host's own word */
            n++;
            continue;
        }
        size_t cmp = quoted ? quoted_len : 0;
        if (cmp > hs->init_len)
            cmp = hs->init_len;
        if (cmp > QUOTE_PROOF)
            cmp = QUOTE_PROOF;
        if (cmp && memcmp(quoted, hs->init, cmp) != 0)
            continue; /* it quotes another datagram: not about this handshake */
        n++;
        if (cmp == QUOTE_PROOF)
            fail(l, PURE_EUNREACH, kind, now);
        else
            hint(l, PURE_EUNREACH, kind, now); /* cannot tell: a hint */
    }
    return n;
}

void pure_hs_on_junk(pure_ctx *ctx, const pure_addr *from, uint64_t now)
{
    for (pure_link *l = ctx->hs_flight_head; l; l = l->hs->flight_next)
        if (hint_applies(l, from))
            hint(l, PURE_ENOTPURE, 0, now);
}

/* SPDX-License-Identifier: MIT */
/* handshake.c: the link handshake on top of Noise IK: the initiator's INIT (Noise message 1,
 * carrying the service name), the responder's RESP (message 2, carrying accept or refusal), the
 * stateless COOKIE reply the responder gives under load, and the REJECT hint for an INIT that did
 * not authenticate. The responder keeps no state for an INIT it refuses or answers with a cookie,
 * and never answers with more bytes than it received (anti-amplification). */
#include <string.h>

#include "admit.h"
#include "link.h"

#define HS_FIRST_RETRY 300000000ull /* 300 ms, doubling per retry */
#define HS_MAX_RETRY 1000000000ull  /* up to 1 s apart */

static void put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u64be(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get_u64be(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

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
    uint8_t e[PURE_DH_LEN];
    if (pure_ctx_random(ctx, e, sizeof e))
        return PURE_ECRYPTO;
    pure_noise_set_ephemeral(&hs->noise, e);
    pure_wipe(e, sizeof e);

    uint8_t payload[PURE_INIT_TS_LEN + 1 + PURE_SERVICE_MAX];
    put_u64be(payload, next_timestamp(ctx));
    payload[PURE_INIT_TS_LEN] = (uint8_t)slen;
    memcpy(payload + PURE_INIT_TS_LEN + 1, hs->service, slen);
    uint8_t *p = hs->init;
    p[0] = PURE_PKT_INIT;
    put_u32le(p + 1, link->local_index);
    size_t mlen = 0;
    rc = pure_noise_write_msg1(&hs->noise, payload, PURE_INIT_TS_LEN + 1 + slen,
                               p + PURE_INIT_FIXED,
                               sizeof hs->init - PURE_INIT_FIXED - 2 * PURE_MAC_LEN, &mlen);
    pure_wipe(payload, sizeof payload);
    if (rc)
        return rc;
    ctx->guard.dh_ops += 3; /* e, es, ss */
    hs->init_len = (uint16_t)(PURE_INIT_FIXED + mlen + 2 * PURE_MAC_LEN);
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
            pure_link_update_timer(l, now);
    }
}

void pure_hs_free(pure_link *link)
{
    pure_ctx_hs_remove(link->ctx, link);
    if (link->resp) {
        pure_mem_free(&link->ctx->alloc, link->resp,
                      PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + PURE_RESP_PAYLOAD);
        link->resp = NULL;
        link->resp_len = 0;
    }
    if (!link->hs)
        return;
    pure_ctx *ctx = link->ctx;
    if (link->hs->queued)
        unqueue(ctx, link);
    if (link->hs->in_flight) {
        ctx->hs_in_flight--;
        link->hs->in_flight = 0;
        activate_queued(ctx, ctx->now);
    }
    pure_noise_wipe(&link->hs->noise);
    pure_wipe(link->hs, sizeof *link->hs);
    pure_mem_free(&link->ctx->alloc, link->hs, sizeof *link->hs);
    link->hs = NULL;
}

void pure_hs_timeout(pure_link *link, uint64_t now)
{
    pure_hs *hs = link->hs;
    if (!hs || now < hs->retry_at)
        return;
    if (now - hs->started >= link->ctx->s.handshake_timeout) {
        pure_link_terminate(link, hs->rejected ? PURE_EKEY : PURE_ETIMEDOUT, 0, NULL, 0, now);
        return;
    }
    hs->retries++;
    /* 300 ms, 600 ms, then every second: a handshake is small, and the budget
     * (handshake_timeout) should buy many tries on a lossy path. */
    uint64_t backoff = HS_FIRST_RETRY << (hs->retries < 2 ? hs->retries : 2);
    if (backoff > HS_MAX_RETRY)
        backoff = HS_MAX_RETRY;
    hs->retry_at = now + backoff;
    /* the error is due at handshake_timeout, not at the retry after it */
    if (hs->retry_at > hs->started + link->ctx->s.handshake_timeout)
        hs->retry_at = hs->started + link->ctx->s.handshake_timeout;
    hs->send_pending = 1; /* the same INIT: a responder that made a link answers from it */
    pure_ctx_mark_pending(link->ctx, link);
}

static void reply_resp_status(pure_ctx *ctx, const pure_addr *from, pure_noise *n,
                              uint32_t receiver, uint8_t status)
{
    pure_ctl *c = pure_ctx_ctl_push(ctx, from);
    if (!c)
        return;
    c->data[0] = PURE_PKT_RESP;
    put_u32le(c->data + 1, 0);
    put_u32le(c->data + 5, receiver);
    size_t mlen = 0;
    uint8_t payload[PURE_RESP_PAYLOAD] = {status, 0, 0, 0, 0}; /* no link: index 0 */
    if (pure_noise_write_msg2(n, payload, sizeof payload, c->data + PURE_RESP_FIXED,
                              sizeof c->data - PURE_RESP_FIXED, &mlen)) {
        ctx->ctl_len--; /* give the slot back */
        return;
    }
    c->len = (uint16_t)(PURE_RESP_FIXED + mlen);
}

/* ---- the responder's admission of an INIT (docs/protocol.md, "Handshake admission") ---- */

/* A new second of INIT counting. */
static void admit_window(pure_ctx *ctx, uint64_t now)
{
    if (now - ctx->admit.window >= 1000000000ull) {
        ctx->admit.window = now;
        ctx->admit.inits_in_window = 0;
        ctx->admit.rejects_in_window = 0;
        ctx->admit.wasted_in_window = 0;
    }
}

/* Under load: many half-open links, or many INITs in the last second that cost a DH and made no
 * link (failed to authenticate, replayed, refused). Honest handshakes, however many, do not make
 * load: they end as links. */
static int under_load(const pure_ctx *ctx)
{
    return ctx->half_open >= ctx->s.handshake_load ||
           ctx->admit.wasted_in_window >= ctx->s.handshake_load;
}

/* A REJECT hint to an INIT whose mac1 or Noise message failed: it echoes that INIT's mac1, so
 * only someone who saw the INIT can make one. Not in silent mode, not under load, and at most
 * handshake_load a second (the replies must not become a reflector). */
static void send_reject(pure_ctx *ctx, const pure_addr *from, uint32_t sender,
                        const uint8_t mac1[PURE_MAC_LEN])
{
    if (!ctx->s.respond_to_unknown) {
        ctx->guard.inits_silent++;
        return;
    }
    if (under_load(ctx) || ctx->admit.rejects_in_window >= ctx->s.handshake_load)
        return;
    pure_ctl *c = pure_ctx_ctl_push(ctx, from);
    if (!c)
        return;
    ctx->admit.rejects_in_window++;
    c->data[0] = PURE_PKT_REJECT;
    put_u32le(c->data + 1, sender);
    memcpy(c->data + 5, mac1, PURE_MAC_LEN);
    c->len = PURE_REJECT_PKT;
}

/* What a cookie is a MAC of: the INIT's source address and its ephemeral key, so a cookie
 * proves the address and admits only that INIT (and its resends). Returns the length. */
static size_t cookie_input(const pure_addr *from, const uint8_t *init,
                           uint8_t what[sizeof from->bytes + PURE_DH_LEN])
{
    size_t alen = from->len <= sizeof from->bytes ? from->len : sizeof from->bytes;
    memcpy(what, from->bytes, alen);
    memcpy(what + alen, init + PURE_INIT_FIXED, PURE_DH_LEN);
    return alen + PURE_DH_LEN;
}

/* 0 if the INIT's mac2 was made with a cookie of ours (current or previous secret) for its
 * source address and ephemeral key. */
static int mac2_valid(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                      uint64_t now)
{
    uint8_t what[sizeof from->bytes + PURE_DH_LEN], cookies[2][PURE_COOKIE_LEN];
    int k = pure_cookie_both(&ctx->cookies, ctx->crypto, now, what, cookie_input(from, d, what),
                             cookies);
    int ok = 0;
    for (int i = 0; i < k; i++) {
        uint8_t want[PURE_MAC_LEN];
        pure_admit_mac(ctx->crypto, cookies[i], PURE_COOKIE_LEN, d, n - PURE_MAC_LEN, want);
        ok |= pure_admit_mac_equal(want, d + n - PURE_MAC_LEN);
    }
    pure_wipe(cookies, sizeof cookies);
    return ok ? 0 : PURE_ECRYPTO;
}

/* Answers an INIT without a valid mac2 under load: a COOKIE reply, sealed to the INIT's mac1. */
static void send_cookie(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                        uint32_t sender, uint64_t now)
{
    uint8_t what[sizeof from->bytes + PURE_DH_LEN], cookie[PURE_COOKIE_LEN], nonce[PURE_NONCE_LEN];
    if (pure_cookie_make(&ctx->cookies, ctx->crypto, now, what, cookie_input(from, d, what),
                         cookie) != 0 ||
        pure_ctx_random(ctx, nonce, sizeof nonce) != 0)
        return;
    pure_ctl *c = pure_ctx_ctl_push(ctx, from);
    if (c) {
        c->data[0] = PURE_PKT_COOKIE;
        put_u32le(c->data + 1, sender);
        if (pure_admit_cookie_seal(ctx->crypto, ctx->admit.cookie_key, nonce,
                                   d + n - 2 * PURE_MAC_LEN, cookie, c->data + 5) != 0) {
            ctx->ctl_len--;
        } else {
            c->len = PURE_COOKIE_PKT;
            ctx->st.cookies_sent++;
        }
    }
    pure_wipe(cookie, sizeof cookie);
}

void pure_hs_half_open_end(pure_link *link, int validated)
{
    if (!link->half_open)
        return;
    link->half_open = 0;
    pure_ctx *ctx = link->ctx;
    if (ctx->half_open)
        ctx->half_open--;
    pure_src_bucket *b = pure_admit_bucket(&ctx->admit, &ctx->alloc, &link->peer);
    if (b && b->half_open)
        b->half_open--;
    /* A handshake the source completed gives its token back: the bucket limits INITs that
     * lead nowhere, not a real client's links. */
    if (b && validated && b->tokens != UINT32_MAX &&
        b->tokens + 1000ull <= (uint64_t)ctx->s.inits_per_addr * 1000)
        b->tokens += 1000;
}


/* Reads an INIT that passed admission: 2 DH (es, ss). Returns the payload's length, or -1 if the
 * Noise message did not authenticate or the payload is malformed. */
static int read_init(pure_ctx *ctx, pure_noise *noise, const uint8_t *d, size_t n,
                     uint8_t *payload, size_t cap)
{
    size_t plen = 0;
    if (pure_noise_init_keys(noise, ctx->crypto, 0, (const uint8_t *)PURE_PROLOGUE,
                             strlen(PURE_PROLOGUE), ctx->s.private_key, ctx->public_key,
                             NULL) != 0)
        return -1;
    ctx->guard.dh_ops += 2;
    if (pure_noise_read_msg1(noise, d + PURE_INIT_FIXED, n - PURE_INIT_FIXED - 2 * PURE_MAC_LEN,
                             payload, cap, &plen) != 0) {
        ctx->st.dropped_auth++;
        return -1;
    }
    if (plen < PURE_INIT_TS_LEN + 2 || payload[PURE_INIT_TS_LEN] != plen - PURE_INIT_TS_LEN - 1) {
        ctx->st.dropped_malformed++;
        return -1;
    }
    return (int)plen;
}

/* Makes the responder's link for an admitted, fresh, allowed INIT and its RESP (2 more DH). */
static void accept_init(pure_ctx *ctx, const pure_addr *from, pure_noise *noise, uint32_t sender,
                        uint64_t tag, const uint8_t *service, size_t slen, size_t n,
                        pure_src_bucket *bucket, uint64_t now)
{
    uint8_t e[PURE_DH_LEN];
    pure_link *link = NULL;
    if (pure_ctx_random(ctx, e, sizeof e) == 0) {
        pure_noise_set_ephemeral(noise, e);
        link = pure_link_alloc(ctx, from, 0, now);
    }
    pure_wipe(e, sizeof e);
    if (!link)
        return;
    /* counted from the start, so every way out of UNVALIDATED uncounts it once */
    link->half_open = 1;
    ctx->half_open++;
    bucket->half_open++;
    link->remote_index = sender;
    link->init_tag = tag;
    memcpy(link->peer_key, noise->rs, PURE_KEY_LEN);
    link->service = (uint16_t)pure_ctx_service_index(ctx, (const char *)service, slen);

    /* The RESP goes out from the link itself (not the shared reply queue, which a burst of
     * INITs can overflow), so a link never exists without its answer on the way. */
    const size_t resp_cap = PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + PURE_RESP_PAYLOAD;
    link->resp = pure_mem_alloc(&ctx->alloc, resp_cap);
    uint8_t k_send[32], k_recv[32], h[32];
    size_t mlen = 0;
    /* the payload repeats our index, so the initiator learns it authenticated */
    uint8_t payload[PURE_RESP_PAYLOAD] = {PURE_RESP_OK};
    put_u32le(payload + 1, link->local_index);
    ctx->guard.dh_ops += 3; /* e, ee, se */
    int rc = !link->resp ||
             pure_noise_write_msg2(noise, payload, sizeof payload, link->resp + PURE_RESP_FIXED,
                                   resp_cap - PURE_RESP_FIXED, &mlen) != 0 ||
             pure_noise_split(noise, k_send, k_recv, link->ck, h) != 0 ||
             pure_keys_install(link, k_send, k_recv) != 0;
    pure_wipe(k_send, sizeof k_send);
    pure_wipe(k_recv, sizeof k_recv);
    pure_wipe(h, sizeof h);
    if (rc) {
        pure_link_terminate(link, PURE_ECRYPTO, 0, NULL, 0, now);
        return;
    }
    link->resp[0] = PURE_PKT_RESP;
    put_u32le(link->resp + 1, link->local_index);
    put_u32le(link->resp + 5, sender);
    link->resp_len = (uint16_t)(PURE_RESP_FIXED + mlen);
    link->resp_pending = 1;
    link->amp_received = n;
    pure_ctx_hs_add(ctx, link); /* if it fails, a resent INIT is taken as a replay */
    pure_ctx_mark_pending(ctx, link);
    pure_link_update_timer(link, now);
}

void pure_hs_on_init(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                     uint64_t now)
{
    const size_t min = PURE_INIT_FIXED + PURE_NOISE_MSG1_OVERHEAD + PURE_INIT_TS_LEN + 2 +
                       2 * PURE_MAC_LEN;
    const size_t max = min + PURE_SERVICE_MAX - 1;
    if (n < min || n > max || ctx->n_services == 0) {
        ctx->st.dropped_malformed++;
        return;
    }
    admit_window(ctx, now);
    uint32_t sender = get_u32le(d + 1);
    const uint8_t *mac1 = d + n - 2 * PURE_MAC_LEN;

    /* 1. mac1: the sender knows our public key. One HMAC; nothing else is spent on a datagram
     *    that fails it. */
    uint8_t want[PURE_MAC_LEN];
    pure_admit_mac(ctx->crypto, ctx->admit.mac1_key, PURE_HASH_LEN, d, n - 2 * PURE_MAC_LEN,
                   want);
    if (!pure_admit_mac_equal(want, mac1)) {
        ctx->guard.inits_bad_mac++;
        ctx->st.dropped_auth++;
        send_reject(ctx, from, sender, mac1);
        return;
    }
    ctx->admit.inits_in_window++;

    /* 2. A resend of an INIT that made a link, from the same address: answer from that link.
     *    The tag covers the INIT but mac2, which a resend after a COOKIE reply fills in. */
    uint64_t tag = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n - PURE_MAC_LEN; i++)
        tag = (tag ^ d[i]) * 0x100000001b3ull;
    pure_link *dup = pure_ctx_hs_find(ctx, tag, from, sender);
    if (dup) {
        ctx->guard.inits_duplicate++;
        dup->amp_received += n;
        dup->resp_pending = 1;
        pure_ctx_mark_pending(ctx, dup);
        return;
    }

    /* 3. Replay of an INIT that authenticated before (from anywhere): no DH. */
    if (pure_admit_seen(&ctx->admit, d + PURE_INIT_FIXED)) {
        ctx->guard.inits_replayed++;
        return;
    }

    /* 4. Under load: proof of the source address (mac2, from a cookie bound to this INIT), then
     *    the source's share: its token bucket. */
    int load = under_load(ctx);
    if (load && mac2_valid(ctx, from, d, n, now) != 0) {
        send_cookie(ctx, from, d, n, sender, now);
        return;
    }
    pure_src_bucket *bucket = pure_admit_bucket(&ctx->admit, &ctx->alloc, from);
    if (!bucket)
        return;
    if (load && !pure_admit_take_token(bucket, ctx->s.inits_per_addr, now)) {
        ctx->guard.inits_throttled++;
        return;
    }
    /* 5. Half-open caps: per context always, per source under load. */
    if (ctx->half_open >= ctx->s.max_half_open ||
        (load && bucket->half_open >= ctx->s.half_open_per_addr)) {
        ctx->guard.inits_half_open_cap++;
        return;
    }

    /* 6. The Noise message (2 DH), then the timestamp against the greatest seen from that key. */
    pure_noise noise;
    uint8_t payload[PURE_INIT_TS_LEN + 1 + PURE_SERVICE_MAX];
    int plen = read_init(ctx, &noise, d, n, payload, sizeof payload);
    if (plen < 0) {
        ctx->admit.wasted_in_window++;
        pure_noise_wipe(&noise);
        send_reject(ctx, from, sender, mac1);
        return;
    }
    const uint8_t *service = payload + PURE_INIT_TS_LEN + 1;
    size_t slen = payload[PURE_INIT_TS_LEN];
    int64_t allow_index = pure_ctx_allow_index(ctx, noise.rs);
    uint8_t status = PURE_RESP_OK;
    if (pure_ctx_service_index(ctx, (const char *)service, slen) < 0)
        status = PURE_RESP_NO_SERVICE;
    if (allow_index == -2) {
        status = PURE_RESP_NOT_ALLOWED;
    } else {
        int fresh = pure_admit_fresh(&ctx->admit, &ctx->alloc, noise.rs, allow_index,
                                     ctx->cap_allow, get_u64be(payload), now);
        if (fresh != 1) {
            if (fresh == 0)
                ctx->guard.inits_replayed++;
            ctx->admit.wasted_in_window++;
            pure_noise_wipe(&noise);
            pure_wipe(payload, sizeof payload);
            return;
        }
    }
    /* remembered from here on: a copy of this INIT is a replay, whatever becomes of it */
    pure_admit_remember(&ctx->admit, &ctx->alloc, d + PURE_INIT_FIXED);
    if (status != PURE_RESP_OK) {
        ctx->admit.wasted_in_window++;
        ctx->st.handshakes_refused++;
        if (status == PURE_RESP_NOT_ALLOWED && !ctx->s.respond_to_unknown) {
            ctx->guard.inits_silent++;
        } else {
            ctx->guard.dh_ops += 3;
            reply_resp_status(ctx, from, &noise, sender, status);
        }
    } else {
        accept_init(ctx, from, &noise, sender, tag, service, slen, n, bucket, now);
    }
    pure_noise_wipe(&noise);
    pure_wipe(payload, sizeof payload);
}

int pure_hs_on_resp(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                    uint64_t now)
{
    if (n < PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + PURE_RESP_PAYLOAD ||
        n > PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + PURE_RESP_PAYLOAD)
        return PURE_EPROTO;
    uint32_t sender = get_u32le(d + 1), receiver = get_u32le(d + 5);
    pure_link *link = pure_ctx_table_find(ctx, receiver);
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    /* A forged RESP leaves the handshake as it was (Noise reads on a scratch copy). */
    pure_noise *noise = &link->hs->noise;
    uint8_t payload[PURE_RESP_PAYLOAD];
    size_t plen = 0;
    ctx->guard.dh_ops += 2; /* ee, se */
    int rc = pure_noise_read_msg2(noise, d + PURE_RESP_FIXED, n - PURE_RESP_FIXED, payload,
                                  sizeof payload, &plen);
    if (rc != 0 || plen != PURE_RESP_PAYLOAD) {
        ctx->st.dropped_auth++;
        return rc == 0 ? PURE_EPROTO : PURE_ECRYPTO;
    }
    uint8_t status = payload[0];
    /* The header's sender index is not authenticated; the payload's copy is, and is the one
     * used (a changed header once sent every packet of the link to a link that did not exist,
     * and the link died at its idle timeout). */
    sender = get_u32le(payload + 1);
    if (status != PURE_RESP_OK) {
        ctx->st.handshakes_refused++;
        pure_link_terminate(link,
                            status == PURE_RESP_NO_SERVICE ? PURE_EREFUSED
                            : status == PURE_RESP_NOT_ALLOWED ? PURE_EACCES
                                                              : PURE_EPROTO,
                            0, NULL, 0, now);
        return 0;
    }
    uint8_t k_send[32], k_recv[32], h[32];
    rc = pure_noise_split(noise, k_send, k_recv, link->ck, h);
    if (rc == 0)
        rc = pure_keys_install(link, k_send, k_recv);
    pure_wipe(k_send, 32);
    pure_wipe(k_recv, 32);
    if (rc != 0) {
        pure_link_terminate(link, PURE_ECRYPTO, 0, NULL, 0, now);
        return rc;
    }
    link->remote_index = sender;
    link->peer = *from;
    pure_hs_free(link);
    /* The first packet from us proves to the responder that we hold the keys: send one now even
     * with nothing queued. */
    link->ping_pending = 1;
    pure_link_open(link, now);
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
    pure_link *link = pure_ctx_table_find(ctx, get_u32le(d + 1));
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
        pure_admit_cookie_open(ctx->crypto, key, mac1, d + 5, cookie) != 0) {
        ctx->guard.cookie_replies_bad++;
        return PURE_ECRYPTO;
    }
    /* mac2 = MAC(cookie, INIT up to mac2); the same INIT goes again at once */
    pure_admit_mac(ctx->crypto, cookie, sizeof cookie, hs->init, hs->init_len - PURE_MAC_LEN,
                   hs->init + hs->init_len - PURE_MAC_LEN);
    pure_wipe(cookie, sizeof cookie);
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
    pure_link *link = pure_ctx_table_find(ctx, get_u32le(d + 1));
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    /* A hint, believed only if it comes from where the INIT went and echoes its mac1. */
    pure_hs *hs = link->hs;
    if (!pure_addr_equal(from, &link->peer) ||
        !pure_admit_mac_equal(d + 5, hs->init + hs->init_len - 2 * PURE_MAC_LEN)) {
        ctx->guard.rejects_bad++;
        return PURE_ECRYPTO;
    }
    hs->rejected = 1;
    return 0;
}

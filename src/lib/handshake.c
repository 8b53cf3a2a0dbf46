/* SPDX-License-Identifier: MIT */
/* handshake.c: the link handshake on top of Noise IK: the initiator's INIT (Noise message 1,
 * carrying the service name), the responder's RESP (message 2, carrying accept or refusal), the
 * stateless COOKIE reply the responder gives under load, and the REJECT hint for an INIT that did
 * not authenticate. The responder keeps no state for an INIT it refuses or answers with a cookie,
 * and never answers with more bytes than it received (anti-amplification). */
#include <string.h>

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
    int rc = pure_noise_init(&hs->noise, ctx->crypto, 1, (const uint8_t *)PURE_PROLOGUE,
                             strlen(PURE_PROLOGUE), ctx->s.private_key, peer_key);
    if (rc)
        return rc;
    uint8_t e[PURE_DH_LEN];
    if (pure_ctx_random(ctx, e, sizeof e))
        return PURE_ECRYPTO;
    pure_noise_set_ephemeral(&hs->noise, e);
    pure_wipe(e, sizeof e);

    uint8_t payload[1 + PURE_SERVICE_MAX];
    payload[0] = (uint8_t)slen;
    memcpy(payload + 1, service, slen);
    uint8_t *p = hs->init;
    p[0] = PURE_PKT_INIT;
    put_u32le(p + 1, link->local_index);
    size_t mlen = 0;
    rc = pure_noise_write_msg1(&hs->noise, payload, 1 + slen, p + PURE_INIT_FIXED,
                               sizeof hs->init - PURE_INIT_FIXED - PURE_COOKIE_LEN, &mlen);
    if (rc)
        return rc;
    hs->init_len = (uint16_t)(PURE_INIT_FIXED + mlen + PURE_COOKIE_LEN);
    memset(p + PURE_INIT_FIXED + mlen, 0, PURE_COOKIE_LEN); /* no cookie yet */
    hs->started = now;
    hs->retry_at = now + HS_FIRST_RETRY;
    hs->send_pending = 1;
    ctx->st.handshakes_started++;
    pure_ctx_mark_pending(ctx, link);
    return 0;
}

void pure_hs_free(pure_link *link)
{
    pure_ctx_hs_remove(link->ctx, link);
    if (link->resp) {
        pure_mem_free(&link->ctx->alloc, link->resp,
                      PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + 1);
        link->resp = NULL;
        link->resp_len = 0;
    }
    if (!link->hs)
        return;
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
    hs->send_pending = 1;
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
    if (pure_noise_write_msg2(n, &status, 1, c->data + PURE_RESP_FIXED,
                              sizeof c->data - PURE_RESP_FIXED, &mlen)) {
        ctx->ctl_len--; /* give the slot back */
        return;
    }
    c->len = (uint16_t)(PURE_RESP_FIXED + mlen);
}

void pure_hs_on_init(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                     uint64_t now)
{
    const size_t min = PURE_INIT_FIXED + PURE_NOISE_MSG1_OVERHEAD + 2 + PURE_COOKIE_LEN;
    const size_t max = min + PURE_SERVICE_MAX - 1;
    if (n < min || n > max || ctx->n_services == 0) {
        ctx->st.dropped_malformed++;
        return;
    }
    uint32_t sender = get_u32le(d + 1);
    const uint8_t *cookie = d + n - PURE_COOKIE_LEN;

    /* A resent INIT (its RESP was lost or slow) is the same bytes: answer from the link it
     * already made instead of making another. The tag hashes the whole INIT but its cookie
     * field (which a resend after a COOKIE reply fills in), so any other INIT, even one sharing
     * the sender index and ephemeral key, does not match; the address must match too. */
    uint64_t tag = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n - PURE_COOKIE_LEN; i++)
        tag = (tag ^ d[i]) * 0x100000001b3ull;
    pure_link *dup = pure_ctx_hs_find(ctx, tag);
    if (dup && dup->state == PURE_LS_UNVALIDATED && dup->remote_index == sender &&
        pure_addr_equal(&dup->peer, from)) {
        dup->amp_received += n;
        dup->resp_pending = 1;
        pure_ctx_mark_pending(ctx, dup);
        return;
    }

    /* Under load, demand proof that the source address is real before any DH or state. Load is
     * many half-open links, or many INITs in the last second whether they authenticate or not
     * (each costs a key exchange, so a flood of junk INITs must not be answered freely). */
    if (now - ctx->init_window >= 1000000000ull) {
        ctx->init_window = now;
        ctx->inits_in_window = 0;
    }
    ctx->inits_in_window++;
    if ((ctx->half_open >= ctx->s.handshake_load ||
         ctx->inits_in_window > ctx->s.handshake_load) &&
        pure_cookie_verify(&ctx->cookies, ctx->crypto, now, from->bytes, from->len, cookie) != 0) {
        pure_ctl *c = pure_ctx_ctl_push(ctx, from);
        if (!c)
            return;
        c->data[0] = PURE_PKT_COOKIE;
        put_u32le(c->data + 1, sender);
        if (pure_cookie_make(&ctx->cookies, ctx->crypto, now, from->bytes, from->len,
                             c->data + 5)) {
            ctx->ctl_len--;
            return;
        }
        c->len = PURE_COOKIE_PKT;
        ctx->st.cookies_sent++;
        return;
    }

    pure_noise noise;
    uint8_t payload[1 + PURE_SERVICE_MAX];
    size_t plen = 0;
    if (pure_noise_init(&noise, ctx->crypto, 0, (const uint8_t *)PURE_PROLOGUE,
                        strlen(PURE_PROLOGUE), ctx->s.private_key, NULL) != 0)
        return;
    int rc = pure_noise_read_msg1(&noise, d + PURE_INIT_FIXED, n - PURE_INIT_FIXED - PURE_COOKIE_LEN,
                                  payload, sizeof payload, &plen);
    if (rc != 0) {
        ctx->st.dropped_auth++;
        pure_noise_wipe(&noise);
        /* A hint only (it is not authenticated): the initiator reports PURE_EKEY rather than a
         * plain timeout if no real answer comes. 5 bytes answer >= 118: no amplification. */
        pure_ctl *c = pure_ctx_ctl_push(ctx, from);
        if (c) {
            c->data[0] = PURE_PKT_REJECT;
            put_u32le(c->data + 1, sender);
            c->len = PURE_REJECT_PKT;
        }
        return;
    }
    if (plen < 2 || payload[0] != plen - 1) {
        ctx->st.dropped_malformed++;
        pure_noise_wipe(&noise);
        return;
    }
    uint8_t status = PURE_RESP_OK;
    if (pure_ctx_service_index(ctx, (const char *)payload + 1, payload[0]) < 0)
        status = PURE_RESP_NO_SERVICE;
    else if (!pure_ctx_allowed(ctx, noise.rs))
        status = PURE_RESP_NOT_ALLOWED;
    if (status != PURE_RESP_OK) {
        reply_resp_status(ctx, from, &noise, sender, status);
        ctx->st.handshakes_refused++;
        pure_noise_wipe(&noise);
        return;
    }

    uint8_t e[PURE_DH_LEN];
    pure_link *link = NULL;
    if (pure_ctx_random(ctx, e, sizeof e) == 0) {
        pure_noise_set_ephemeral(&noise, e);
        link = pure_link_alloc(ctx, from, 0, now);
    }
    pure_wipe(e, sizeof e);
    if (!link) {
        pure_noise_wipe(&noise);
        return;
    }
    link->remote_index = sender;
    link->init_tag = tag;
    memcpy(link->peer_key, noise.rs, PURE_KEY_LEN);
    link->service = (uint16_t)pure_ctx_service_index(ctx, (const char *)payload + 1, payload[0]);

    /* The RESP goes out from the link itself (not the shared reply queue, which a burst of
     * INITs can overflow), so a link never exists without its answer on the way. */
    const size_t resp_cap = PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + 1;
    link->resp = pure_mem_alloc(&ctx->alloc, resp_cap);
    uint8_t k_send[32], k_recv[32], h[32];
    size_t mlen = 0;
    status = PURE_RESP_OK;
    if (!link->resp ||
        pure_noise_write_msg2(&noise, &status, 1, link->resp + PURE_RESP_FIXED,
                              resp_cap - PURE_RESP_FIXED, &mlen) != 0 ||
        pure_noise_split(&noise, k_send, k_recv, link->ck, h) != 0 ||
        pure_keys_install(link, k_send, k_recv) != 0) {
        pure_noise_wipe(&noise);
        pure_wipe(k_send, 32);
        pure_wipe(k_recv, 32);
        pure_link_terminate(link, PURE_ECRYPTO, 0, NULL, 0, now);
        return;
    }
    pure_noise_wipe(&noise);
    pure_wipe(k_send, 32);
    pure_wipe(k_recv, 32);
    link->resp[0] = PURE_PKT_RESP;
    put_u32le(link->resp + 1, link->local_index);
    put_u32le(link->resp + 5, sender);
    link->resp_len = (uint16_t)(PURE_RESP_FIXED + mlen);
    link->resp_pending = 1;
    link->amp_received = n;
    pure_ctx_hs_add(ctx, link); /* if it fails, a resent INIT just makes a new link */
    ctx->half_open++;
    pure_ctx_mark_pending(ctx, link);
    pure_link_update_timer(link, now);
}

int pure_hs_on_resp(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                    uint64_t now)
{
    if (n < PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + 1 ||
        n > PURE_RESP_FIXED + PURE_NOISE_MSG2_OVERHEAD + 1)
        return PURE_EPROTO;
    uint32_t sender = get_u32le(d + 1), receiver = get_u32le(d + 5);
    pure_link *link = pure_ctx_table_find(ctx, receiver);
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    /* A forged RESP leaves the handshake as it was (Noise reads on a scratch copy). */
    pure_noise *noise = &link->hs->noise;
    uint8_t status = 0xff;
    size_t plen = 0;
    int rc = pure_noise_read_msg2(noise, d + PURE_RESP_FIXED, n - PURE_RESP_FIXED, &status, 1,
                                  &plen);
    if (rc != 0 || plen != 1) {
        ctx->st.dropped_auth++;
        return rc == 0 ? PURE_EPROTO : PURE_ECRYPTO;
    }
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

int pure_hs_on_cookie(pure_ctx *ctx, const uint8_t *d, size_t n, uint64_t now)
{
    if (n != PURE_COOKIE_PKT)
        return PURE_EPROTO;
    pure_link *link = pure_ctx_table_find(ctx, get_u32le(d + 1));
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    pure_hs *hs = link->hs;
    memcpy(hs->cookie, d + 5, PURE_COOKIE_LEN);
    hs->has_cookie = 1;
    memcpy(hs->init + hs->init_len - PURE_COOKIE_LEN, hs->cookie, PURE_COOKIE_LEN);
    hs->send_pending = 1;
    pure_ctx_mark_pending(ctx, link);
    (void)now;
    return 0;
}

int pure_hs_on_reject(pure_ctx *ctx, const uint8_t *d, size_t n, uint64_t now)
{
    (void)now;
    if (n != PURE_REJECT_PKT)
        return PURE_EPROTO;
    pure_link *link = pure_ctx_table_find(ctx, get_u32le(d + 1));
    if (!link || link->state != PURE_LS_HANDSHAKE || !link->hs) {
        ctx->st.dropped_unknown_link++;
        return PURE_EINVAL;
    }
    link->hs->rejected = 1;
    return 0;
}

/* SPDX-License-Identifier: MIT */
/* handshake_resp.c: the responder's side of the handshake: admission of an INIT before any DH or
 * state is spent on it (mac1, resends, replays, cookies under load, per-source token buckets,
 * half-open caps: docs/protocol.md, "Handshake admission"), then the Noise message, the
 * timestamp against replay, the refusals, the link with its RESP, and the handshake's end when
 * the initiator's first packet under the new keys arrives. The responder keeps no
 * state for an INIT it refuses or answers with a cookie, and never answers with more bytes than
 * it received. */
#include <string.h>

#include "admit.h"
#include "handshake.h"
#include "keys.h"
#include "lifecycle.h"
#include "registry.h"
#include "timers.h"
#include "tparams.h"
#include "varint.h"

static void reply_resp_status(pure_ctx *ctx, const pure_addr *from, pure_noise *n,
                              uint32_t receiver, uint8_t status)
{
    pure_ctl *c = pure_ctx_ctl_push(ctx, from);
    if (!c)
        return;
    pure_put_u32le(pure_wire_put_header(c->data, PURE_PKT_RESP, 0), receiver);
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
 * load: they end as links. "Many" is handshake_load, and never more than half of max_half_open:
 * links from INITs that did not prove their address are made only below it, so they can never
 * fill max_half_open, and the other half is always there for INITs that proved theirs. */
static uint32_t load_threshold(const pure_ctx *ctx)
{
    uint32_t half = ctx->s.max_half_open / 2 + ctx->s.max_half_open % 2;
    return ctx->s.handshake_load < half ? ctx->s.handshake_load : half;
}

static int under_load(const pure_ctx *ctx)
{
    return ctx->half_open >= load_threshold(ctx) ||
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
    pure_wire_put_header(c->data, PURE_PKT_REJECT, sender);
    memcpy(c->data + 5, mac1, PURE_MAC_LEN);
    c->len = PURE_REJECT_PKT;
}

/* A VERSION reply to an INIT of a version we do not speak (its sender index at idx_at): the
 * versions we speak, and an echo of the 16 unpredictable bytes after that index, so only someone
 * who saw the INIT can forge one. A hint like REJECT, under the same rules: not in silent mode (a
 * scan must not find us), not under load, at most handshake_load replies a second with REJECTs,
 * and never larger than the INIT (25 bytes for at least 64). */
static void send_version(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                         size_t idx_at)
{
    ctx->guard.inits_other_version++;
    uint32_t ours = pure_ctx_wire_version(ctx);
    if (!ctx->s.respond_to_unknown) {
        ctx->guard.inits_silent++;
        return;
    }
    if (n < PURE_VERSION_FIXED + 4 || under_load(ctx) ||
        ctx->admit.rejects_in_window >= ctx->s.handshake_load)
        return;
    pure_ctl *c = pure_ctx_ctl_push(ctx, from);
    if (!c)
        return;
    ctx->admit.rejects_in_window++;
    pure_wire_put_header(c->data, PURE_PKT_VERSION, pure_get_u32le(d + idx_at));
    memcpy(c->data + 5, d + idx_at + 4, PURE_VERSION_ECHO_LEN);
    pure_put_u32be(c->data + PURE_VERSION_FIXED, ours);
    c->len = PURE_VERSION_FIXED + 4;
}

void pure_hs_on_init_v(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n,
                       uint64_t now)
{
    /* Too short to carry the fixed fields and the bytes a reply echoes, or claiming a version
     * this responder speaks in this form (version 1's INIT is type 0x01; a test's other version
     * has no INIT this library can read): not an INIT of another version. */
    if (n < PURE_INIT_V_MIN || pure_get_u32be(d + 1) == pure_ctx_wire_version(ctx) ||
        pure_get_u32be(d + 1) == PURE_PROTOCOL_VERSION || ctx->n_services == 0) {
        ctx->st.dropped_malformed++;
        return;
    }
    admit_window(ctx, now);
    send_version(ctx, from, d, n, 5);
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
        pure_wire_put_header(c->data, PURE_PKT_COOKIE, sender);
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

/* Reads an INIT that passed admission: 2 DH (es, ss). Returns the payload's length, or -1 if the
 * Noise message did not authenticate or the payload is malformed. */
static int read_init(pure_ctx *ctx, pure_noise *noise, const uint8_t *d, size_t n, uint8_t *payload,
                     size_t cap)
{
    size_t plen = 0;
    if (pure_noise_init_keys(noise, ctx->crypto, 0, (const uint8_t *)PURE_PROLOGUE,
                             strlen(PURE_PROLOGUE), ctx->s.private_key, ctx->public_key, NULL) != 0)
        return -1;
    pure_sscache *ssc = pure_ctx_sscache(ctx);
    pure_noise_set_ss_cache(noise, ssc);
    uint64_t hits = ssc ? ssc->hits : 0;
    int rc = pure_noise_read_msg1(noise, d + PURE_INIT_FIXED,
                                  n - PURE_INIT_FIXED - 2 * PURE_MAC_LEN, payload, cap, &plen);
    ctx->guard.dh_ops += 2 - (ssc ? ssc->hits - hits : 0); /* es, and ss unless cached */
    if (rc != 0) {
        ctx->st.dropped_auth++;
        return -1;
    }
    /* timestamp · service length · service (1..63 bytes) · transport parameters (any, or none
     * from an initiator built before them; they are read later, as the refusals are) */
    size_t slen = plen > PURE_INIT_TS_LEN ? payload[PURE_INIT_TS_LEN] : 0;
    if (slen < 1 || slen > PURE_SERVICE_MAX || plen < PURE_INIT_TS_LEN + 1 + slen) {
        ctx->st.dropped_malformed++;
        return -1;
    }
    return (int)plen;
}

/* What an INIT asks, from its decrypted payload: the service, and the initiator's transport
 * parameters after its name, to the payload's end (tplen bytes; none from an initiator built
 * before them). Returns the RESP status as far as these decide it. */
static uint8_t init_request(pure_ctx *ctx, const uint8_t *payload, size_t plen, pure_tparams *tp,
                            size_t *tplen)
{
    const uint8_t *service = payload + PURE_INIT_TS_LEN + 1;
    size_t slen = payload[PURE_INIT_TS_LEN];
    uint8_t status = PURE_RESP_OK;
    *tplen = plen - (PURE_INIT_TS_LEN + 1 + slen);
    if (pure_ctx_service_index(ctx, (const char *)service, slen) < 0)
        status = PURE_RESP_NO_SERVICE;
    if (pure_tparams_decode(service + slen, *tplen, tp) != 0) {
        status = PURE_RESP_BAD_PARAMS;
        ctx->st.dropped_malformed++;
    }
    return status;
}

/* Makes the responder's link for an admitted, fresh, allowed INIT and its RESP (2 more DH). The
 * link is charged to its source's bucket only if its INIT proved that address (bucket not NULL). */
static void accept_init(pure_ctx *ctx, const pure_addr *from, pure_noise *noise, uint32_t sender,
                        uint64_t tag, const uint8_t *service, size_t slen, size_t n,
                        pure_src_bucket *bucket, const pure_tparams *peer_tp, int tp_known,
                        uint64_t now)
{
    uint8_t e[PURE_DH_LEN];
    pure_link *link = NULL;
    if (pure_ctx_random(ctx, e, sizeof e) == 0) {
        pure_noise_set_ephemeral(noise, e);
        link = pure_link_alloc(ctx, from, 0, now, NULL);
    }
    pure_wipe(e, sizeof e);
    if (!link)
        return;
    /* counted from the start, so every way out of UNVALIDATED uncounts it once (half_open_end) */
    link->half_open = bucket ? PURE_HALF_OPEN_PROVEN : PURE_HALF_OPEN_UNPROVEN;
    ctx->half_open++;
    if (bucket)
        bucket->half_open++;
    link->remote_index = sender;
    link->init_tag = tag;
    memcpy(link->peer_key, noise->rs, PURE_KEY_LEN);
    link->service = (uint16_t)pure_ctx_service_index(ctx, (const char *)service, slen);
    pure_tparams_store(link, peer_tp, tp_known);

    /* The RESP goes out from the link itself (not the shared reply queue, which a burst of
     * INITs can overflow), so a link never exists without its answer on the way. */
    const size_t resp_cap = PURE_RESP_CAP;
    link->resp = pure_mem_alloc(&ctx->alloc, resp_cap);
    uint8_t k_send[32], k_recv[32], h[32];
    size_t mlen = 0;
    /* the payload repeats our index, so the initiator learns it authenticated; our transport
     * parameters follow only for an initiator that sent its own: one built before them takes a
     * RESP of exactly the old length only */
    uint8_t payload[PURE_RESP_PAYLOAD + PURE_TPARAMS_ROOM] = {PURE_RESP_OK};
    pure_put_u32le(payload + 1, link->local_index);
    size_t plen = PURE_RESP_PAYLOAD;
    if (tp_known) {
        uint8_t tpb[PURE_TPARAMS_ROOM];
        size_t tplen = pure_tparams_write_local(ctx, tpb);
        if (tplen > PURE_TPARAMS_MAX)
            tplen = 0; /* a test's raw set too long for the RESP buffer: none */
        memcpy(payload + plen, tpb, tplen);
        plen += tplen;
    }
    ctx->guard.dh_ops += 3; /* e, ee, se */
    int rc = !link->resp ||
             pure_noise_write_msg2(noise, payload, plen, link->resp + PURE_RESP_FIXED,
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
    pure_put_u32le(pure_wire_put_header(link->resp, PURE_PKT_RESP, link->local_index), sender);
    link->resp_len = (uint16_t)(PURE_RESP_FIXED + mlen);
    link->resp_pending = 1;
    link->amp_received = n;
    pure_ctx_hs_add(ctx, link); /* if it fails, a resent INIT is taken as a replay */
    pure_ctx_mark_pending(ctx, link);
    pure_timers_update(link, now);
}

/* An INIT that made a link came again. From the link's address: its RESP was lost, the link
 * sends it again. From another address: the initiator's NAT may have moved it mid-handshake
 * (its resend then comes from a new port), or someone copies the INIT. A copy of the RESP goes
 * there, at most PURE_RESP_ELSEWHERE times per link: smaller than the INIT (no amplification),
 * no new link, no DH; a copier learns nothing it can use without the initiator's keys. */
#define PURE_RESP_ELSEWHERE 3
static void resend_resp(pure_ctx *ctx, pure_link *link, const pure_addr *from, size_t n)
{
    ctx->guard.inits_duplicate++;
    if (pure_addr_equal(&link->peer, from)) {
        link->amp_received += n;
        link->resp_pending = 1;
        pure_ctx_mark_pending(ctx, link);
        return;
    }
    if (link->resp_elsewhere >= PURE_RESP_ELSEWHERE || !link->resp) {
        ctx->guard.inits_replayed++;
        return;
    }
    pure_ctl *c = pure_ctx_ctl_push(ctx, from);
    if (!c)
        return;
    link->resp_elsewhere++;
    memcpy(c->data, link->resp, link->resp_len);
    c->len = link->resp_len;
}

/* Steps 1-5 of admission, before any DH. Returns 1 if the INIT may go on to its Noise message
 * (its tag in *tag_out; in *bucket its source's bucket if it proved its source address with a
 * cookie, else NULL), 0 if it was dealt with (dropped or answered).
 *
 * What an INIT that did not prove its address does is charged to no address: its source may be
 * spoofed, and a charge would let a spoofer spend the real owner's budget (review finding N1).
 * Under load it gets a cookie and nothing else; while not under load it may make a link, which
 * counts towards the load and the context's caps only. An address's token bucket and half-open
 * count are spent only by INITs with a valid mac2, which only a sender that receives at that
 * address (or sees its traffic) can make. */
static int admit(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n, uint64_t now,
                 uint64_t *tag_out, pure_src_bucket **bucket)
{
    uint32_t sender = pure_wire_index(d);
    const uint8_t *mac1 = d + n - 2 * PURE_MAC_LEN;

    /* 1. mac1: the sender knows our public key. One HMAC; nothing else is spent on a datagram
     *    that fails it. */
    uint8_t want[PURE_MAC_LEN];
    pure_admit_mac(ctx->crypto, ctx->admit.mac1_key, PURE_HASH_LEN, d, n - 2 * PURE_MAC_LEN, want);
    if (!pure_admit_mac_equal(want, mac1)) {
        ctx->guard.inits_bad_mac++;
        ctx->st.dropped_auth++;
        send_reject(ctx, from, sender, mac1);
        return 0;
    }
    ctx->admit.inits_in_window++;

    /* 2. A resend of an INIT that made a link, from the same address: answer from that link.
     *    The tag covers the INIT but mac2, which a resend after a COOKIE reply fills in. */
    uint64_t tag = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n - PURE_MAC_LEN; i++)
        tag = (tag ^ d[i]) * 0x100000001b3ull;
    pure_link *dup = pure_ctx_hs_find(ctx, tag, sender);
    if (dup) {
        resend_resp(ctx, dup, from, n);
        return 0;
    }

    /* 3. Replay of an INIT that authenticated before (from anywhere), or of an ephemeral key
     *    whose cookie was spent (below): no DH. */
    if (pure_admit_seen(&ctx->admit, d + PURE_INIT_FIXED)) {
        ctx->guard.inits_replayed++;
        return 0;
    }

    /* 4. Under load: proof of the source address (mac2, from a cookie bound to this INIT), then
     *    the source's share: its token bucket (the table is allocated at the first load). */
    *bucket = NULL;
    if (under_load(ctx)) {
        if (mac2_valid(ctx, from, d, n, now) != 0) {
            send_cookie(ctx, from, d, n, sender, now);
            return 0;
        }
        *bucket = pure_admit_bucket(&ctx->admit, &ctx->alloc, from, ctx->s.max_half_open);
        if (!*bucket)
            return 0;
        if (!pure_admit_take_token(*bucket, ctx->s.inits_per_addr, now)) {
            ctx->guard.inits_throttled++;
            return 0;
        }
    }
    /* 5. Half-open caps: per context always, per proven source under load (its proven links). */
    if (ctx->half_open >= ctx->s.max_half_open ||
        (*bucket && (*bucket)->half_open >= ctx->s.half_open_per_addr)) {
        ctx->guard.inits_half_open_cap++;
        return 0;
    }
    *tag_out = tag;
    return 1;
}

void pure_hs_on_init(pure_ctx *ctx, const pure_addr *from, const uint8_t *d, size_t n, uint64_t now)
{
    const size_t min =
        PURE_INIT_FIXED + PURE_NOISE_MSG1_OVERHEAD + PURE_INIT_TS_LEN + 2 + 2 * PURE_MAC_LEN;
    const size_t max = min + PURE_SERVICE_MAX - 1 + PURE_TPARAMS_ROOM;
    if (n < min || n > max || ctx->n_services == 0) {
        ctx->st.dropped_malformed++;
        return;
    }
    admit_window(ctx, now);
    uint64_t tag = 0;
    if (pure_ctx_wire_version(ctx) != PURE_PROTOCOL_VERSION) { /* a test's, of another version */
        send_version(ctx, from, d, n, PURE_WIRE_INDEX_AT);
        return;
    }
    pure_src_bucket *bucket = NULL; /* set if the INIT proved its address */
    if (!admit(ctx, from, d, n, now, &tag, &bucket))
        return;
    /* A cookie admits one INIT to its DH: one that proved its address and then failed (junk
     * behind a valid mac1 and a cookie bound to its ephemeral key, or a stale timestamp) has that
     * key remembered, so the same cookie cannot buy another DH and another token (N3). */
    const uint8_t *e = d + PURE_INIT_FIXED;
    uint32_t sender = pure_wire_index(d);

    /* 6. The Noise message (2 DH), then the timestamp against the greatest seen from that key. */
    pure_noise noise;
    uint8_t payload[PURE_INIT_TS_LEN + 1 + PURE_SERVICE_MAX + PURE_TPARAMS_ROOM];
    int plen = read_init(ctx, &noise, d, n, payload, sizeof payload);
    if (plen < 0) {
        ctx->admit.wasted_in_window++;
        if (bucket)
            pure_admit_remember(&ctx->admit, &ctx->alloc, e);
        pure_noise_wipe(&noise);
        send_reject(ctx, from, sender, d + n - 2 * PURE_MAC_LEN);
        return;
    }
    const uint8_t *service = payload + PURE_INIT_TS_LEN + 1;
    size_t slen = payload[PURE_INIT_TS_LEN];
    int64_t allow_index = pure_ctx_allow_index(ctx, noise.rs);
    pure_tparams peer_tp;
    size_t tplen = 0;
    uint8_t status = init_request(ctx, payload, (size_t)plen, &peer_tp, &tplen);
    if (status == PURE_RESP_OK && ctx->drain) /* a fleet's server being drained: go elsewhere */
        status = PURE_RESP_MOVED;
    if (allow_index == -2) {
        status = PURE_RESP_NOT_ALLOWED;
    } else {
        int fresh = pure_admit_fresh(&ctx->admit, &ctx->alloc, noise.rs, allow_index,
                                     ctx->cap_allow, pure_get_u64be(payload), now);
        if (fresh != 1) {
            if (fresh == 0)
                ctx->guard.inits_replayed++;
            ctx->admit.wasted_in_window++;
            if (bucket)
                pure_admit_remember(&ctx->admit, &ctx->alloc, e);
            pure_noise_wipe(&noise);
            pure_wipe(payload, sizeof payload);
            return;
        }
    }
    /* remembered from here on: a copy of this INIT is a replay, whatever becomes of it */
    pure_admit_remember(&ctx->admit, &ctx->alloc, e);
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
        accept_init(ctx, from, &noise, sender, tag, service, slen, n, bucket, &peer_tp, tplen > 0,
                    now);
    }
    pure_noise_wipe(&noise);
    pure_wipe(payload, sizeof payload);
}

int pure_hs_confirmed(pure_link *link, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    pure_hs_free(link); /* the RESP buffer */
    /* from the INIT that made the link, which the first RESP answered at once */
    pure_rtt_handshake_sample(&link->rtt, now - link->created, ctx->s.max_ack_delay);
    pure_link_open(link, now);
    if (ctx->drain) { /* drained during its handshake (pure_ctx_drain): the client goes elsewhere */
        pure_link_terminate(link, PURE_ECLOSED, PURE_CLOSE_MOVED, "moved: go elsewhere", 1, now);
        return PURE_ECLOSED;
    }
    ctx->st.handshakes_accepted++;
    int rc = 0;
    link->accepted = 1;
    if (ctx->cb.on_accept)
        rc = ctx->cb.on_accept(link, ctx->services[link->service], link->peer_key, ctx->s.user);
    if (rc < 0) {
        link->accepted = 0; /* refused: the application does not hear of it again */
        pure_link_terminate(link, PURE_EREFUSED, PURE_CLOSE_REFUSED, "refused", 1, now);
        return PURE_EREFUSED;
    }
    return link->state == PURE_LS_OPEN ? 0 : PURE_ECLOSED; /* closed from on_accept */
}

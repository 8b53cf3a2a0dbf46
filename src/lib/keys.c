/* SPDX-License-Identifier: MIT */
/* keys.c: transport keys. Each direction's AES-128-GCM key and IV come from its Noise split key
 * through HKDF (key = out1[0..16), iv = out2[0..12) of HKDF(ck = split key, "pure transport")); a
 * packet's nonce is the IV XOR its packet number, as in TLS 1.3, so no nonce is ever reused
 * under one key while packet numbers only grow.
 *
 * The receive side's limits (docs/crypto.md): packets that fail to open are counted per receive
 * key, and the link closes when a key reaches max_failed_opens (the AEAD's integrity limit: each
 * forgery is a guess at the key's tag, and the odds add up). After a switch the previous receive
 * key opens late packets until three probe timeouts after the peer's first packet under the new
 * one (RFC 9001 section 6.5), then it is wiped. */
#include <string.h>

#include "keys.h"

int pure_keys_derive(pure_ctx *ctx, pure_dir_keys *k, const uint8_t split[32])
{
    uint8_t out1[32], out2[32];
    static const char label[] = "pure transport";
    pure_hkdf2(ctx->crypto, out1, out2, split, (const uint8_t *)label, sizeof label - 1);
    if (k->live)
        ctx->crypto->aead_free(&k->aead);
    k->live = 0;
    memcpy(k->key, out1, sizeof k->key);
    memcpy(k->iv, out2, PURE_NONCE_LEN);
    pure_wipe(out1, sizeof out1);
    pure_wipe(out2, sizeof out2);
    k->ready = 1;
    return pure_keys_aead(ctx, k) ? 0 : PURE_ECRYPTO;
}

pure_aead *pure_keys_aead(pure_ctx *ctx, pure_dir_keys *k)
{
    if (k->live)
        return &k->aead;
    if (!k->ready || ctx->crypto->aead_init(&k->aead, PURE_AEAD_AES128_GCM, k->key) != 0)
        return NULL;
    k->live = 1;
    return &k->aead;
}

void pure_keys_park(pure_link *link)
{
    pure_dir_keys *all[3] = {&link->tx, &link->rx[0], &link->rx[1]};
    for (int i = 0; i < 3; i++)
        if (all[i]->live) {
            link->ctx->crypto->aead_free(&all[i]->aead);
            all[i]->live = 0;
        }
}

int pure_keys_install(pure_link *link, const uint8_t k_send[32], const uint8_t k_recv[32])
{
    int rc = pure_keys_derive(link->ctx, &link->tx, k_send);
    if (rc == 0)
        rc = pure_keys_derive_rx(link, 0, k_recv);
    return rc;
}

int pure_keys_derive_rx(pure_link *link, uint8_t phase, const uint8_t split[32])
{
    link->rx_failed[phase] = 0;
    link->rx_retire = PURE_RX_RETIRE_NONE; /* a previous key in this slot is overwritten here */
    return pure_keys_derive(link->ctx, &link->rx[phase], split);
}

/* The integrity limit, as the 32-bit per-key counters can hold it. */
static uint32_t failed_open_limit(const pure_ctx *ctx)
{
    return ctx->s.max_failed_opens < UINT32_MAX ? (uint32_t)ctx->s.max_failed_opens : UINT32_MAX;
}

int pure_keys_open(pure_link *link, uint8_t *d, size_t n, uint64_t pn)
{
    pure_ctx *ctx = link->ctx;
    uint8_t phase = pure_wire_data_phase(d);
    pure_dir_keys *k = &link->rx[phase];
    pure_aead *aead = pure_keys_aead(ctx, k);
    if (!aead) { /* no key of that phase (not yet, or retired): nothing was tried */
        ctx->st.dropped_auth++;
        link->st.dropped_auth++;
        return PURE_ECRYPTO;
    }
    uint8_t nonce[PURE_NONCE_LEN];
    pure_keys_nonce(nonce, k->iv, pn);
    size_t plen = n - PURE_DATA_HEADER - PURE_TAG_LEN;
    uint8_t *payload = d + PURE_DATA_HEADER;
    if (ctx->crypto->aead_open(aead, nonce, d, PURE_DATA_HEADER, payload, plen, payload + plen) !=
        0) {
        ctx->st.dropped_auth++;
        link->st.dropped_auth++;
        ctx->guard.failed_opens++;
        if (link->rx_failed[phase] < UINT32_MAX)
            link->rx_failed[phase]++;
        return PURE_ECRYPTO;
    }
    return 0;
}

int pure_keys_forged_too_often(const pure_link *link, uint8_t phase)
{
    return link->rx_failed[phase & 1] >= failed_open_limit(link->ctx);
}

void pure_keys_retire_wait(pure_link *link)
{
    link->rx_retire = PURE_RX_RETIRE_WAIT;
}

void pure_keys_retire_later(pure_link *link, uint64_t now)
{
    /* The deadline lives with the busy state (an idle link retires at once, unbusy): the caller
     * made the link busy; if that failed, the next packet tries again. */
    if (!link->b)
        return;
    uint64_t pto = pure_rtt_pto(&link->rtt, link->ctx->s.max_ack_delay);
    link->b->rx_retire_at = now + 3 * pto;
    link->rx_retire = PURE_RX_RETIRE_TIMED;
}

void pure_keys_retire(pure_link *link)
{
    uint8_t old = link->key_phase ^ 1;
    if (link->rx_retire == PURE_RX_RETIRE_NONE)
        return;
    /* frees the AEAD context (the backend wipes its key schedule) and zeroes key and IV */
    pure_keys_wipe_dir(link->ctx, &link->rx[old]);
    link->rx_failed[old] = 0;
    link->rx_retire = PURE_RX_RETIRE_NONE;
}

void pure_keys_wipe_dir(pure_ctx *ctx, pure_dir_keys *k)
{
    if (k->live)
        ctx->crypto->aead_free(&k->aead);
    pure_wipe(k, sizeof *k);
}

void pure_keys_wipe(pure_link *link)
{
    pure_keys_wipe_dir(link->ctx, &link->tx);
    pure_keys_wipe_dir(link->ctx, &link->rx[0]);
    pure_keys_wipe_dir(link->ctx, &link->rx[1]);
    pure_wipe(link->ck, sizeof link->ck);
}

void pure_keys_nonce(uint8_t nonce[PURE_NONCE_LEN], const uint8_t iv[PURE_NONCE_LEN], uint64_t pn)
{
    /* the IV's last 8 bytes XOR the big-endian packet number, as one 64-bit word (a loop over
     * the bytes was ~64 instructions a packet on each side, callgrind) */
    uint64_t tail, x;
    memcpy(nonce, iv, PURE_NONCE_LEN - 8);
    memcpy(&tail, iv + PURE_NONCE_LEN - 8, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    x = __builtin_bswap64(pn);
#else
    x = pn;
#endif
    tail ^= x;
    memcpy(nonce + PURE_NONCE_LEN - 8, &tail, 8);
}

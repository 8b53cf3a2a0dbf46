/* SPDX-License-Identifier: MIT */
/* keys.c: transport keys. Each direction's AES-128-GCM key and IV come from its Noise split key
 * through HKDF (key = out1[0..16), iv = out2[0..12) of HKDF(ck = split key, "pure transport")); a
 * packet's nonce is the IV XOR its packet number, as in TLS 1.3, so no nonce is ever reused
 * under one key while packet numbers only grow. */
#include <string.h>

#include "link.h"

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
        rc = pure_keys_derive(link->ctx, &link->rx[0], k_recv);
    return rc;
}

void pure_keys_wipe_dir(pure_ctx *ctx, pure_dir_keys *k)
{
    if (k->live)
        ctx->crypto->aead_free(&k->aead);
    pure_wipe(k, sizeof *k);
}

void pure_keys_wipe(pure_link *link)
{
    pure_rekey_free(link);
    pure_keys_wipe_dir(link->ctx, &link->tx);
    pure_keys_wipe_dir(link->ctx, &link->rx[0]);
    pure_keys_wipe_dir(link->ctx, &link->rx[1]);
    pure_wipe(link->ck, sizeof link->ck);
}

void pure_keys_nonce(uint8_t nonce[PURE_NONCE_LEN], const uint8_t iv[PURE_NONCE_LEN], uint64_t pn)
{
    memcpy(nonce, iv, PURE_NONCE_LEN);
    for (int i = 0; i < 8; i++)
        nonce[PURE_NONCE_LEN - 1 - i] ^= (uint8_t)(pn >> (8 * i));
}

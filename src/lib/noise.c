/* SPDX-License-Identifier: MIT */
/* noise.c: the Noise IK handshake, Noise_IK_25519_AESGCM_SHA256 (noise.h), written from the Noise
 * Protocol Framework specification revision 34, sections 5 (processing rules) and 7.5 (IK). */
#include "noise.h"

#include <string.h>

#include "pure.h"
#include "sscache.h"

/* ---- CipherState (section 5.1), AESGCM (section 12.5) ---- */

/* AESGCM's nonce: 32 bits of zeros, then the 64-bit counter big-endian. */
static void noise_nonce(uint8_t nonce[PURE_NONCE_LEN], uint64_t n)
{
    memset(nonce, 0, 4);
    for (int i = 0; i < 8; i++)
        nonce[4 + i] = (uint8_t)(n >> (56 - 8 * i));
}

/* One AEAD context per operation: each key encrypts exactly one thing in IK, and holding no
 * context keeps pure_noise free of heap memory. */
static int cipher_seal(pure_noise *hs, const uint8_t *ad, uint8_t *data, size_t len)
{
    uint8_t nonce[PURE_NONCE_LEN];
    pure_aead a;
    int rc = hs->c->aead_init(&a, PURE_AEAD_AES256_GCM, hs->k);
    if (rc != 0)
        return rc;
    noise_nonce(nonce, hs->n);
    rc = hs->c->aead_seal(&a, nonce, ad, PURE_HASH_LEN, data, len, data + len);
    hs->c->aead_free(&a);
    return rc;
}

static int cipher_open(pure_noise *hs, const uint8_t *ad, uint8_t *data, size_t len,
                       const uint8_t tag[PURE_TAG_LEN])
{
    uint8_t nonce[PURE_NONCE_LEN];
    pure_aead a;
    int rc = hs->c->aead_init(&a, PURE_AEAD_AES256_GCM, hs->k);
    if (rc != 0)
        return rc;
    noise_nonce(nonce, hs->n);
    rc = hs->c->aead_open(&a, nonce, ad, PURE_HASH_LEN, data, len, tag);
    hs->c->aead_free(&a);
    return rc;
}

/* ---- SymmetricState (section 5.2) ---- */

static void mix_hash(pure_noise *hs, const uint8_t *data, size_t len)
{
    hs->c->hash(hs->h, hs->h, PURE_HASH_LEN, data, len, NULL, 0);
}

/* MixKey of a DH result already computed (rc its code): the result is wiped here either way. */
static int mix_key(pure_noise *hs, uint8_t shared[PURE_DH_LEN], int rc)
{
    if (rc == 0) {
        pure_hkdf2(hs->c, hs->ck, hs->k, hs->ck, shared, PURE_DH_LEN);
        hs->has_k = 1;
        hs->n = 0;
    }
    pure_wipe(shared, PURE_DH_LEN);
    return rc;
}

/* MixKey(DH(priv, pub)): the DH result never leaves this function. */
static int mix_dh(pure_noise *hs, const uint8_t priv[PURE_DH_LEN], const uint8_t pub[PURE_DH_LEN])
{
    uint8_t shared[PURE_DH_LEN];
    return mix_key(hs, shared, hs->c->dh(shared, priv, pub));
}

/* MixKey(DH(s, rs)), the `ss` token, through the context's cache when there is one. */
static int mix_ss(pure_noise *hs)
{
    if (!hs->ssc)
        return mix_dh(hs, hs->s_priv, hs->rs);
    uint8_t shared[PURE_DH_LEN];
    return mix_key(hs, shared, pure_sscache_dh(hs->ssc, hs->c, shared, hs->s_priv, hs->rs));
}

/* EncryptAndHash in place: len plaintext bytes at buf become len + 16 bytes (with a key) or stay
 * as they are (no key yet, which IK never hits but the rule is kept). */
static int encrypt_and_hash(pure_noise *hs, uint8_t *buf, size_t len, size_t *outlen)
{
    if (hs->has_k) {
        int rc = cipher_seal(hs, hs->h, buf, len);
        if (rc != 0)
            return rc;
        hs->n++;
        len += PURE_TAG_LEN;
    }
    mix_hash(hs, buf, len);
    *outlen = len;
    return 0;
}

/* DecryptAndHash: ct (ctlen bytes, the tag last when a key is set) is opened into out, which
 * receives only the plaintext (ctlen - 16 bytes), so out needs no room for the tag. h is the AD
 * of the decryption and also what the ciphertext is hashed into, so the next h is computed
 * first, and committed only when the tag verifies. Callers guarantee ctlen >= 16 with a key. */
static int decrypt_and_hash(pure_noise *hs, const uint8_t *ct, size_t ctlen, uint8_t *out,
                            size_t *outlen)
{
    uint8_t h_next[PURE_HASH_LEN];
    size_t len = hs->has_k ? ctlen - PURE_TAG_LEN : ctlen;
    hs->c->hash(h_next, hs->h, PURE_HASH_LEN, ct, ctlen, NULL, 0);
    if (len > 0)
        memmove(out, ct, len);
    if (hs->has_k) {
        if (cipher_open(hs, hs->h, out, len, ct + len) != 0)
            return PURE_ECRYPTO;
        hs->n++;
    }
    memcpy(hs->h, h_next, PURE_HASH_LEN);
    *outlen = len;
    return 0;
}

/* ---- HandshakeState (section 5.3) ---- */

int pure_noise_init(pure_noise *hs, const pure_crypto *c, int initiator, const uint8_t *prologue,
                    size_t prologue_len, const uint8_t s_priv[32], const uint8_t *rs_pub)
{
    return pure_noise_init_keys(hs, c, initiator, prologue, prologue_len, s_priv, NULL, rs_pub);
}

int pure_noise_init_keys(pure_noise *hs, const pure_crypto *c, int initiator,
                         const uint8_t *prologue, size_t prologue_len, const uint8_t s_priv[32],
                         const uint8_t *s_pub, const uint8_t *rs_pub)
{
    static const char name[] = PURE_NOISE_PROTOCOL;
    if (hs == NULL)
        return PURE_EINVAL;
    memset(hs, 0, sizeof(*hs));
    if (c == NULL || s_priv == NULL || (prologue == NULL && prologue_len > 0) ||
        (initiator && rs_pub == NULL) || (!initiator && rs_pub != NULL))
        return PURE_EINVAL;
    hs->c = c;
    hs->initiator = initiator ? 1 : 0;
    memcpy(hs->s_priv, s_priv, PURE_DH_LEN);
    if (s_pub)
        memcpy(hs->s_pub, s_pub, PURE_DH_LEN);
    else if (c->dh_public(hs->s_pub, hs->s_priv) != 0) {
        pure_noise_wipe(hs);
        return PURE_ECRYPTO;
    }
    /* InitializeSymmetric: the name is 28 bytes, shorter than HASHLEN, so h is the name padded
     * with zeros and ck = h. */
    memcpy(hs->h, name, sizeof(name) - 1);
    memcpy(hs->ck, hs->h, PURE_HASH_LEN);
    mix_hash(hs, prologue, prologue_len);
    /* Pre-message pattern "<- s": both sides hash the responder's static public key. */
    if (initiator) {
        memcpy(hs->rs, rs_pub, PURE_DH_LEN);
        mix_hash(hs, hs->rs, PURE_DH_LEN);
        hs->state = PURE_NOISE_INIT_START;
    } else {
        mix_hash(hs, hs->s_pub, PURE_DH_LEN);
        hs->state = PURE_NOISE_RESP_WAIT_MSG1;
    }
    return 0;
}

void pure_noise_set_ss_cache(pure_noise *hs, struct pure_sscache *cache)
{
    if (hs != NULL)
        hs->ssc = cache;
}

void pure_noise_set_ephemeral(pure_noise *hs, const uint8_t e_priv[32])
{
    if (hs == NULL || e_priv == NULL ||
        (hs->state != PURE_NOISE_INIT_START && hs->state != PURE_NOISE_RESP_WAIT_MSG1 &&
         hs->state != PURE_NOISE_RESP_GOT_MSG1))
        return;
    memcpy(hs->e_priv, e_priv, PURE_DH_LEN);
    hs->has_e = 1;
}

/* Token "e" when writing: a fresh ephemeral key (unless fixed for a test), sent in clear. */
static int write_e(pure_noise *hs, uint8_t *out)
{
    int rc;
    if (!hs->has_e && (rc = hs->c->random(hs->e_priv, PURE_DH_LEN)) != 0)
        return rc;
    if ((rc = hs->c->dh_public(hs->e_pub, hs->e_priv)) != 0)
        return rc;
    memcpy(out, hs->e_pub, PURE_DH_LEN);
    mix_hash(hs, hs->e_pub, PURE_DH_LEN);
    return 0;
}

/* Marks a handshake dead after a failure that has already changed its state. */
static int fail(pure_noise *hs, int rc)
{
    pure_noise_wipe(hs);
    hs->state = PURE_NOISE_FAILED;
    return rc;
}

int pure_noise_write_msg1(pure_noise *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                          size_t cap, size_t *outlen)
{
    size_t n, off = 0;
    int rc;
    if (hs == NULL || out == NULL || outlen == NULL || (payload == NULL && plen > 0) ||
        hs->state != PURE_NOISE_INIT_START)
        return PURE_EINVAL;
    if (cap < PURE_NOISE_MSG1_OVERHEAD || plen > cap - PURE_NOISE_MSG1_OVERHEAD)
        return PURE_ENOBUFS;
    /* e */
    if ((rc = write_e(hs, out)) != 0)
        return fail(hs, rc);
    off += PURE_DH_LEN;
    /* es */
    if ((rc = mix_dh(hs, hs->e_priv, hs->rs)) != 0)
        return fail(hs, rc);
    /* s */
    memcpy(out + off, hs->s_pub, PURE_DH_LEN);
    if ((rc = encrypt_and_hash(hs, out + off, PURE_DH_LEN, &n)) != 0)
        return fail(hs, rc);
    off += n;
    /* ss */
    if ((rc = mix_ss(hs)) != 0)
        return fail(hs, rc);
    /* payload */
    if (plen > 0)
        memmove(out + off, payload, plen);
    if ((rc = encrypt_and_hash(hs, out + off, plen, &n)) != 0)
        return fail(hs, rc);
    off += n;
    *outlen = off;
    hs->state = PURE_NOISE_INIT_WAIT_MSG2;
    return 0;
}

/* The body of read_msg1 on a scratch copy; see pure_noise_read_msg1 for the transaction. */
static int read_msg1(pure_noise *hs, const uint8_t *msg, size_t len, uint8_t *payload, size_t *plen)
{
    size_t off = 0, n;
    int rc;
    /* e */
    memcpy(hs->re, msg, PURE_DH_LEN);
    mix_hash(hs, hs->re, PURE_DH_LEN);
    off += PURE_DH_LEN;
    /* es */
    if ((rc = mix_dh(hs, hs->s_priv, hs->re)) != 0)
        return rc;
    /* s */
    if ((rc = decrypt_and_hash(hs, msg + off, PURE_DH_LEN + PURE_TAG_LEN, hs->rs, &n)) != 0)
        return rc;
    off += PURE_DH_LEN + PURE_TAG_LEN;
    /* ss */
    if ((rc = mix_ss(hs)) != 0)
        return rc;
    /* payload */
    return decrypt_and_hash(hs, msg + off, len - off, payload, plen);
}

/* Reads run on a scratch copy that replaces the real state only on success: a forged or
 * corrupted message then leaves the handshake exactly as it was. The payload is decrypted into
 * the caller's buffer, whose contents are unspecified after a failure but never unauthenticated
 * plaintext (a refused open zeroes what it decrypted, crypto.h). */
static int read_msg2(pure_noise *hs, const uint8_t *msg, size_t len, uint8_t *payload,
                     size_t *plen);

static int read_on_copy(pure_noise *hs, enum pure_noise_state want, enum pure_noise_state next,
                        size_t overhead,
                        int (*reader)(pure_noise *, const uint8_t *, size_t, uint8_t *, size_t *),
                        const uint8_t *msg, size_t len, uint8_t *payload, size_t cap, size_t *plen)
{
    pure_noise tmp;
    int rc;
    if (hs == NULL || msg == NULL || plen == NULL || hs->state != want)
        return PURE_EINVAL;
    if (len < overhead)
        return PURE_EPROTO;
    if (len - overhead > cap || (payload == NULL && len > overhead))
        return PURE_ENOBUFS;
    tmp = *hs;
    rc = reader(&tmp, msg, len, payload, plen);
    if (rc == 0) {
        tmp.state = (uint8_t)next;
        *hs = tmp;
    }
    pure_wipe(&tmp, sizeof(tmp));
    return rc;
}

int pure_noise_read_msg1(pure_noise *hs, const uint8_t *msg, size_t len, uint8_t *payload,
                         size_t cap, size_t *plen)
{
    return read_on_copy(hs, PURE_NOISE_RESP_WAIT_MSG1, PURE_NOISE_RESP_GOT_MSG1,
                        PURE_NOISE_MSG1_OVERHEAD, read_msg1, msg, len, payload, cap, plen);
}

int pure_noise_write_msg2(pure_noise *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                          size_t cap, size_t *outlen)
{
    size_t n, off = 0;
    int rc;
    if (hs == NULL || out == NULL || outlen == NULL || (payload == NULL && plen > 0) ||
        hs->state != PURE_NOISE_RESP_GOT_MSG1)
        return PURE_EINVAL;
    if (cap < PURE_NOISE_MSG2_OVERHEAD || plen > cap - PURE_NOISE_MSG2_OVERHEAD)
        return PURE_ENOBUFS;
    /* e */
    if ((rc = write_e(hs, out)) != 0)
        return fail(hs, rc);
    off += PURE_DH_LEN;
    /* ee */
    if ((rc = mix_dh(hs, hs->e_priv, hs->re)) != 0)
        return fail(hs, rc);
    /* se: the initiator's static with our ephemeral */
    if ((rc = mix_dh(hs, hs->e_priv, hs->rs)) != 0)
        return fail(hs, rc);
    /* payload */
    if (plen > 0)
        memmove(out + off, payload, plen);
    if ((rc = encrypt_and_hash(hs, out + off, plen, &n)) != 0)
        return fail(hs, rc);
    off += n;
    *outlen = off;
    hs->state = PURE_NOISE_DONE;
    return 0;
}

static int read_msg2(pure_noise *hs, const uint8_t *msg, size_t len, uint8_t *payload, size_t *plen)
{
    int rc;
    /* e */
    memcpy(hs->re, msg, PURE_DH_LEN);
    mix_hash(hs, hs->re, PURE_DH_LEN);
    /* ee */
    if ((rc = mix_dh(hs, hs->e_priv, hs->re)) != 0)
        return rc;
    /* se: our static with the responder's ephemeral */
    if ((rc = mix_dh(hs, hs->s_priv, hs->re)) != 0)
        return rc;
    /* payload */
    return decrypt_and_hash(hs, msg + PURE_DH_LEN, len - PURE_DH_LEN, payload, plen);
}

int pure_noise_read_msg2(pure_noise *hs, const uint8_t *msg, size_t len, uint8_t *payload,
                         size_t cap, size_t *plen)
{
    return read_on_copy(hs, PURE_NOISE_INIT_WAIT_MSG2, PURE_NOISE_DONE, PURE_NOISE_MSG2_OVERHEAD,
                        read_msg2, msg, len, payload, cap, plen);
}

int pure_noise_split(pure_noise *hs, uint8_t k_send[32], uint8_t k_recv[32], uint8_t ck[32],
                     uint8_t h[32])
{
    uint8_t k1[PURE_HASH_LEN], k2[PURE_HASH_LEN];
    if (hs == NULL || k_send == NULL || k_recv == NULL || hs->state != PURE_NOISE_DONE)
        return PURE_EINVAL;
    /* Split(): k1, k2 = HKDF(ck, zero-length input); the initiator sends with k1. */
    pure_hkdf2(hs->c, k1, k2, hs->ck, NULL, 0);
    memcpy(k_send, hs->initiator ? k1 : k2, 32);
    memcpy(k_recv, hs->initiator ? k2 : k1, 32);
    if (ck != NULL)
        memcpy(ck, hs->ck, PURE_HASH_LEN);
    if (h != NULL)
        memcpy(h, hs->h, PURE_HASH_LEN);
    pure_wipe(k1, sizeof(k1));
    pure_wipe(k2, sizeof(k2));
    pure_noise_wipe(hs);
    return 0;
}

void pure_noise_wipe(pure_noise *hs)
{
    if (hs != NULL)
        pure_wipe(hs, sizeof(*hs));
}

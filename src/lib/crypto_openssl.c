/* crypto_openssl.c: the OpenSSL 3.0 libcrypto backend of the crypto seam (crypto.h). */
#include "crypto.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "pure.h"

/* Algorithms are fetched once per process: an implicit fetch (EVP_aes_128_gcm(), EVP_sha256())
 * costs a lock and a name lookup on every init, and a fetched object can be shared by every
 * context and thread. They live until exit (OpenSSL frees them at its own cleanup). */
static EVP_CIPHER *g_aes128gcm, *g_aes256gcm;
static EVP_MD *g_sha256;
static pthread_once_t g_fetch_once = PTHREAD_ONCE_INIT;

static void fetch_algorithms(void)
{
    g_aes128gcm = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    g_aes256gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    g_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static int fetched(void)
{
    pthread_once(&g_fetch_once, fetch_algorithms);
    return g_aes128gcm != NULL && g_aes256gcm != NULL && g_sha256 != NULL;
}

static int ossl_random(uint8_t *buf, size_t len)
{
    while (len > 0) {
        int n = len > INT_MAX ? INT_MAX : (int)len;
        if (RAND_bytes(buf, n) != 1)
            return PURE_ECRYPTO;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int ossl_dh_public(uint8_t pub[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN])
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, PURE_DH_LEN);
    size_t len = PURE_DH_LEN;
    int rc = PURE_ECRYPTO;
    if (k != NULL && EVP_PKEY_get_raw_public_key(k, pub, &len) == 1 && len == PURE_DH_LEN)
        rc = 0;
    EVP_PKEY_free(k);
    return rc;
}

static int ossl_dh(uint8_t out[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN],
                   const uint8_t pub[PURE_DH_LEN])
{
    static const uint8_t zero[PURE_DH_LEN];
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, PURE_DH_LEN);
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, pub, PURE_DH_LEN);
    EVP_PKEY_CTX *ctx = k != NULL ? EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL) : NULL;
    size_t len = PURE_DH_LEN;
    int rc = PURE_ECRYPTO;
    if (ctx != NULL && peer != NULL && EVP_PKEY_derive_init(ctx) == 1 &&
        EVP_PKEY_derive_set_peer(ctx, peer) == 1 && EVP_PKEY_derive(ctx, out, &len) == 1 &&
        len == PURE_DH_LEN)
        rc = 0;
    /* OpenSSL already refuses an all-zero result (a low-order peer point); checked again here
     * because the seam promises it whatever the library version does. */
    if (rc == 0 && CRYPTO_memcmp(out, zero, PURE_DH_LEN) == 0)
        rc = PURE_ECRYPTO;
    if (rc != 0)
        pure_wipe(out, PURE_DH_LEN);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(peer);
    EVP_PKEY_free(k);
    return rc;
}

/* Digest of up to three pieces into out; returns 1 on success. */
static int sha256_3(uint8_t out[PURE_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
                    size_t blen, const uint8_t *c, size_t clen)
{
    EVP_MD_CTX *md = fetched() ? EVP_MD_CTX_new() : NULL;
    int ok = md != NULL && EVP_DigestInit_ex2(md, g_sha256, NULL) == 1 &&
             (a == NULL || EVP_DigestUpdate(md, a, alen) == 1) &&
             (b == NULL || EVP_DigestUpdate(md, b, blen) == 1) &&
             (c == NULL || EVP_DigestUpdate(md, c, clen) == 1) &&
             EVP_DigestFinal_ex(md, out, NULL) == 1;
    EVP_MD_CTX_free(md);
    return ok;
}

/* The seam's hash and hmac return nothing: they cannot fail short of memory exhaustion inside
 * OpenSSL. Should that happen, the output is filled with bytes no peer will reproduce, so the
 * handshake or cookie check that uses it fails closed rather than succeeding on stale data. */
static void fail_closed(uint8_t out[PURE_HASH_LEN])
{
    if (RAND_bytes(out, PURE_HASH_LEN) != 1)
        memset(out, 0xa5, PURE_HASH_LEN);
}

static void ossl_hash(uint8_t out[PURE_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
                      size_t blen, const uint8_t *c, size_t clen)
{
    if (!sha256_3(out, a, alen, b, blen, c, clen))
        fail_closed(out);
}

/* HMAC-SHA256 (RFC 2104) built on the digest: OpenSSL 3.0's one-shot HMAC() takes one buffer and
 * EVP_MAC needs a parameter dance per call, while the handshake needs HMAC(key, a || b). */
static void ossl_hmac(uint8_t out[PURE_HASH_LEN], const uint8_t *key, size_t keylen,
                      const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    uint8_t k[64] = {0}, pad[64], inner[PURE_HASH_LEN];
    int ok = 1;
    if (keylen > sizeof(k))
        ok = sha256_3(k, key, keylen, NULL, 0, NULL, 0);
    else if (keylen > 0)
        memcpy(k, key, keylen);
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    ok = ok && sha256_3(inner, pad, 64, a, alen, b, blen);
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    ok = ok && sha256_3(out, pad, 64, inner, sizeof(inner), NULL, 0);
    if (!ok)
        fail_closed(out);
    pure_wipe(k, sizeof(k));
    pure_wipe(pad, sizeof(pad));
    pure_wipe(inner, sizeof(inner));
}

/* One EVP_CIPHER_CTX per key, used for both directions. GCM only ever runs the block cipher
 * forwards, so the AES key schedule and the GHASH table computed in aead_init serve sealing and
 * opening alike; each packet only passes its nonce and direction (a NULL key keeps the
 * schedule). One context instead of an encrypt/decrypt pair halves the memory a key costs, which
 * matters for many idle links. */
static int ossl_aead_init(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key)
{
    EVP_CIPHER *cipher;
    EVP_CIPHER_CTX *ctx;
    if (a == NULL || key == NULL)
        return PURE_EINVAL;
    a->impl = NULL;
    if (!fetched())
        return PURE_ECRYPTO;
    if (alg == PURE_AEAD_AES128_GCM)
        cipher = g_aes128gcm;
    else if (alg == PURE_AEAD_AES256_GCM)
        cipher = g_aes256gcm;
    else
        return PURE_EINVAL;
    ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return PURE_ENOMEM;
    /* The IV length is GCM's default of 12 bytes (PURE_NONCE_LEN), so it needs no ctrl. */
    if (EVP_CipherInit_ex2(ctx, cipher, key, NULL, 1, NULL) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return PURE_ECRYPTO;
    }
    a->impl = ctx;
    a->backend = &pure_crypto_openssl;
    a->alg = (uint8_t)alg;
    return 0;
}

static void ossl_aead_free(pure_aead *a)
{
    if (a == NULL)
        return;
    /* EVP_CIPHER_CTX_free cleanses the provider context (key schedule included). */
    EVP_CIPHER_CTX_free(a->impl);
    a->impl = NULL;
}

/* Length guard: EVP update calls take int lengths. */
static int fits_int(size_t adlen, size_t len)
{
    return adlen <= INT_MAX && len <= INT_MAX;
}

static int ossl_aead_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                          size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN])
{
    EVP_CIPHER_CTX *ctx = a != NULL ? a->impl : NULL;
    OSSL_PARAM params[2];
    uint8_t fin[16]; /* GCM's final writes nothing; a real buffer keeps data == NULL legal */
    int outl;
    if (ctx == NULL || !fits_int(adlen, len))
        return PURE_EINVAL;
    if (EVP_CipherInit_ex2(ctx, NULL, NULL, nonce, 1, NULL) != 1)
        return PURE_ECRYPTO;
    if (adlen > 0 && EVP_CipherUpdate(ctx, NULL, &outl, ad, (int)adlen) != 1)
        return PURE_ECRYPTO;
    if (len > 0 && EVP_CipherUpdate(ctx, data, &outl, data, (int)len) != 1)
        return PURE_ECRYPTO;
    if (EVP_CipherFinal_ex(ctx, fin, &outl) != 1)
        return PURE_ECRYPTO;
    /* get_params straight to the provider: EVP_CIPHER_CTX_ctrl(GCM_GET_TAG) would build this
     * same parameter array for us after a switch over every legacy ctrl. */
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, PURE_TAG_LEN);
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_CIPHER_CTX_get_params(ctx, params) != 1)
        return PURE_ECRYPTO;
    return 0;
}

static int ossl_aead_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                          size_t adlen, uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN])
{
    EVP_CIPHER_CTX *ctx = a != NULL ? a->impl : NULL;
    OSSL_PARAM params[2];
    uint8_t fin[16]; /* GCM's final writes nothing; a real buffer keeps data == NULL legal */
    int outl;
    if (ctx == NULL || !fits_int(adlen, len))
        return PURE_EINVAL;
    if (EVP_CipherInit_ex2(ctx, NULL, NULL, nonce, 0, NULL) != 1)
        return PURE_ECRYPTO;
    /* The expected tag may be set before the data; the provider copies it. */
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, (void *)tag,
                                                  PURE_TAG_LEN);
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_CIPHER_CTX_set_params(ctx, params) != 1)
        return PURE_ECRYPTO;
    if (adlen > 0 && EVP_CipherUpdate(ctx, NULL, &outl, ad, (int)adlen) != 1)
        return PURE_ECRYPTO;
    if (len > 0 && EVP_CipherUpdate(ctx, data, &outl, data, (int)len) != 1)
        return PURE_ECRYPTO;
    /* Final compares the tags in constant time; a mismatch is an authentication failure. */
    if (EVP_CipherFinal_ex(ctx, fin, &outl) != 1)
        return PURE_ECRYPTO;
    return 0;
}

const pure_crypto pure_crypto_openssl = {
    .name = "openssl",
    .random = ossl_random,
    .dh_public = ossl_dh_public,
    .dh = ossl_dh,
    .hash = ossl_hash,
    .hmac = ossl_hmac,
    .aead_init = ossl_aead_init,
    .aead_free = ossl_aead_free,
    .aead_seal = ossl_aead_seal,
    .aead_open = ossl_aead_open,
};

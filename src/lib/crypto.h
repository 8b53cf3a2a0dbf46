/* SPDX-License-Identifier: MIT */
/* crypto.h: the narrow seam between Pure and its cryptography backends: the default (the kernel's
 * random source, Nettle or OpenSSL for X25519, SHA-256 and HMAC, and per key the fastest AES-GCM
 * this CPU and build offer: VAES code, GnuTLS or OpenSSL; src/crypto/crypto_default.c), OpenSSL
 * libcrypto alone, or the deterministic null backend for tests and fuzzing.
 *
 * Pure uses one fixed suite: X25519, SHA-256 (HMAC/HKDF as in the Noise framework) for the
 * handshake, AES-256-GCM inside the Noise handshake messages (Noise's "AESGCM") and AES-128-GCM for
 * transport packets. Nothing is negotiated. A backend is a table of functions; the core never
 * calls a crypto library directly. */
#ifndef PURE_CRYPTO_H
#define PURE_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define PURE_DH_LEN 32    /* X25519 private and public key bytes */
#define PURE_HASH_LEN 32  /* SHA-256 */
#define PURE_TAG_LEN 16   /* GCM tag */
#define PURE_NONCE_LEN 12 /* GCM nonce */
#define PURE_AEAD_MAX_KEY 32

/* Which AEAD a context runs. */
enum pure_aead_alg {
    PURE_AEAD_AES128_GCM = 1, /* transport packets: 16-byte key */
    PURE_AEAD_AES256_GCM = 2, /* Noise handshake ("AESGCM"): 32-byte key */
};

/* An AEAD context with its key scheduled once and reused for every packet. Opaque to the core;
 * the backend keeps what it needs behind `impl`, and `ops` names the implementation that
 * scheduled the key, so a backend that chooses among several (the default) chooses once, at
 * init, and never again per packet. */
typedef struct pure_aead {
    void *impl;
    const struct pure_aead_impl *ops;
    uint8_t alg;
} pure_aead;

/* A run of a packet's plaintext that is not in the packet yet: len bytes at src, which seal
 * into data[at, at + len) (pure_crypto.aead_seal_from). */
typedef struct pure_aead_src {
    const uint8_t *src;
    size_t at;
    size_t len;
} pure_aead_src;

/* One AEAD implementation: the four aead functions of a backend (contracts as in pure_crypto
 * below). Every implementation's init sets a->ops to itself as soon as a is non-NULL, so a
 * context that init refused still has ops whose seal, open and free refuse it safely. */
typedef struct pure_aead_impl {
    const char *name;
    int (*init)(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key);
    void (*free)(pure_aead *a);
    int (*seal)(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad, size_t adlen,
                uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN]);
    int (*open)(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad, size_t adlen,
                uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN]);
    /* Optional (NULL: the runs are copied in and seal does the rest). */
    int (*seal_from)(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                     size_t adlen, uint8_t *data, size_t len, const pure_aead_src *runs,
                     size_t nruns, uint8_t tag[PURE_TAG_LEN]);
} pure_aead_impl;

/* A crypto backend. Every function returns 0 on success or a negative PURE_E* code. */
typedef struct pure_crypto {
    const char *name;
    /* Fills buf with len random bytes (the context may override this source; see
     * pure_settings.random). */
    int (*random)(uint8_t *buf, size_t len);
    /* X25519: public key of a private key; shared secret. dh fails (PURE_ECRYPTO) on an all-zero
     * result (a low-order point). */
    int (*dh_public)(uint8_t pub[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN]);
    int (*dh)(uint8_t out[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN],
              const uint8_t pub[PURE_DH_LEN]);
    /* SHA-256 over the concatenation of up to 3 pieces (a NULL piece is skipped). */
    void (*hash)(uint8_t out[PURE_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
                 size_t blen, const uint8_t *c, size_t clen);
    /* HMAC-SHA256(key, a || b). */
    void (*hmac)(uint8_t out[PURE_HASH_LEN], const uint8_t *key, size_t keylen, const uint8_t *a,
                 size_t alen, const uint8_t *b, size_t blen);
    /* AEAD: schedule a key into a reusable context; free wipes it. */
    int (*aead_init)(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key);
    void (*aead_free)(pure_aead *a);
    /* Seal len bytes in place at data (in == out), writing the 16-byte tag to tag. ad is
     * authenticated, not encrypted. */
    int (*aead_seal)(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                     size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN]);
    /* Open len bytes in place; returns PURE_ECRYPTO when the tag does not verify, and then the
     * len bytes at data are zero: no unauthenticated plaintext is ever left in the caller's
     * buffer, whatever the backend (most decrypt before they can check the tag). */
    int (*aead_open)(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                     size_t adlen, uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN]);
    /* Optional (NULL: pure_aead_seal_from copies the runs in and calls aead_seal). As aead_seal,
     * but out of place for the runs: the plaintext of data[runs[i].at, + runs[i].len) is read
     * from runs[i].src, and data there receives the ciphertext (what it held before is never
     * read). Runs are in order of at, do not overlap, and lie within len. A packet's stream
     * bytes go from the send ring straight into the packet, sealed, without a copy first. */
    int (*aead_seal_from)(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                          size_t adlen, uint8_t *data, size_t len, const pure_aead_src *runs,
                          size_t nruns, uint8_t tag[PURE_TAG_LEN]);
} pure_crypto;

/* The default backend, what a context uses unless told otherwise (src/crypto/crypto_default.c):
 * the kernel's getrandom(2) for randomness; Nettle for X25519 public keys, SHA-256 and HMAC where
 * the build has it, else OpenSSL; OpenSSL for X25519 key agreement. Each AEAD context's
 * implementation is chosen once, when its key is scheduled: transport packets' AES-128-GCM
 * through src/crypto/aead_vaes.c on CPUs with VAES and VPCLMULQDQ (~3x faster per packet than
 * the libraries here), otherwise AES-GCM through GnuTLS when the build has it (per packet ~1,550
 * fewer instructions than OpenSSL 3.0's provider path; see src/crypto/aead_gnutls.c), else
 * OpenSSL's. */
extern const pure_crypto pure_crypto_default;
/* The OpenSSL libcrypto backend (src/crypto/crypto_openssl.c). */
extern const pure_crypto pure_crypto_openssl;
/* The null backend (src/crypto/crypto_null.c): deterministic, insecure, for tests and fuzzing. Its
 * DH is commutative but trivial, its AEAD does not encrypt but its tag still detects any change to
 * the data, ad or nonce, and its random is a seeded PRNG (pure_crypto_null_seed). */
extern const pure_crypto pure_crypto_null;
void pure_crypto_null_seed(uint64_t seed);

/* HKDF as the Noise framework defines it (HMAC-SHA256): from chaining key ck and input key
 * material ikm, derive out1 and, if out2 is non-NULL, out2 (each 32 bytes). */
void pure_hkdf2(const pure_crypto *c, uint8_t out1[PURE_HASH_LEN], uint8_t out2[PURE_HASH_LEN],
                const uint8_t ck[PURE_HASH_LEN], const uint8_t *ikm, size_t ikmlen);

/* Seals as c->aead_seal_from does (crypto.h), through it when the backend has one, else by
 * copying the runs into data and sealing in place with seal (c's aead_seal, or an
 * implementation's seal: pure_aead_seal_copying). PURE_EINVAL for runs out of order, overlapping
 * or beyond len. */
int pure_aead_seal_from(const pure_crypto *c, pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN],
                        const uint8_t *ad, size_t adlen, uint8_t *data, size_t len,
                        const pure_aead_src *runs, size_t nruns, uint8_t tag[PURE_TAG_LEN]);
typedef int (*pure_aead_seal_fn)(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN],
                                 const uint8_t *ad, size_t adlen, uint8_t *data, size_t len,
                                 uint8_t tag[PURE_TAG_LEN]);
int pure_aead_seal_copying(pure_aead_seal_fn seal, pure_aead *a,
                           const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad, size_t adlen,
                           uint8_t *data, size_t len, const pure_aead_src *runs, size_t nruns,
                           uint8_t tag[PURE_TAG_LEN]);
/* 1 if runs are in order of at, do not overlap, lie within len and have a source when not empty. */
int pure_aead_runs_valid(size_t len, const pure_aead_src *runs, size_t nruns);

/* Overwrites n bytes at p with zeros in a way the compiler cannot elide. */
void pure_wipe(void *p, size_t n);

#endif

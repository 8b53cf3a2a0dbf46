/* SPDX-License-Identifier: MIT */
/* crypto_test.c: known-answer and tamper tests of the crypto seam's two backends. The VAES code
 * is checked here where the CPU has it (vectors, tamper, failed opens); its test against OpenSSL
 * is vaes_test.c, which shows as skipped on a CPU without VAES. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aead_vaes.h"
#include "crypto.h"
#include "crypto_openssl.h"
#include "pure.h"
#include "test.h"
#ifdef PURE_HAVE_GNUTLS
#include "aead_gnutls.h"
#endif

/* The AEADs behind the default backend, each on its own: the VAES code (where the CPU has it) and
 * GnuTLS (where the build has it, and the default's AES-GCM when the CPU lacks VAES); the rest of
 * each table is OpenSSL's. */
static pure_crypto vaes_aead, gnutls_aead;
static void make_aead_tables(void)
{
    vaes_aead = pure_crypto_openssl;
    vaes_aead.name = "vaes";
    vaes_aead.aead_init = pure_vaes_aead_init;
    vaes_aead.aead_free = pure_vaes_aead_free;
    vaes_aead.aead_seal = pure_vaes_aead_seal;
    vaes_aead.aead_open = pure_vaes_aead_open;
    gnutls_aead = pure_crypto_openssl;
#ifdef PURE_HAVE_GNUTLS
    gnutls_aead.name = "gnutls";
    gnutls_aead.aead_init = pure_gnutls_aead_init;
    gnutls_aead.aead_free = pure_gnutls_aead_free;
    gnutls_aead.aead_seal = pure_gnutls_aead_seal;
    gnutls_aead.aead_open = pure_gnutls_aead_open;
#endif
}

static const pure_crypto *const backends[] = {&pure_crypto_openssl, &pure_crypto_null,
                                              &pure_crypto_default, &gnutls_aead};

/* Test hook in crypto_openssl.c: 1 = new AEAD contexts use the EVP fallback path instead of
 * calling the provider directly. The AEAD tests run on both paths. */
void pure_crypto_openssl_force_evp(int on);

static void test_sha256(void)
{
    /* FIPS 180-2 appendix B examples. Both backends are real SHA-256. */
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        const pure_crypto *c = backends[b];
        uint8_t out[32];
        const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        c->hash(out, (const uint8_t *)"abc", 3, NULL, 0, NULL, 0);
        CHECK(pure_test_eq_hex(out, 32,
                               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        c->hash(out, NULL, 0, NULL, 0, NULL, 0);
        CHECK(pure_test_eq_hex(out, 32,
                               "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        c->hash(out, (const uint8_t *)two, strlen(two), NULL, 0, NULL, 0);
        CHECK(pure_test_eq_hex(out, 32,
                               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
        /* The three pieces are one message: splitting it anywhere gives the same digest. */
        c->hash(out, (const uint8_t *)two, 5, (const uint8_t *)two + 5, 50,
                (const uint8_t *)two + 55, strlen(two) - 55);
        CHECK(pure_test_eq_hex(out, 32,
                               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    }
}

static void test_sha256_backends_agree(void)
{
    /* Lengths around the 55/56/64-byte padding edges, where a portable SHA-256 usually breaks. */
    uint8_t buf[300], a[32], b[32];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t n = 0; n <= sizeof(buf); n++) {
        pure_crypto_openssl.hash(a, buf, n, NULL, 0, NULL, 0);
        pure_crypto_null.hash(b, buf, n, NULL, 0, NULL, 0);
        CHECK(memcmp(a, b, 32) == 0);
    }
}

static void test_hmac_rfc4231(void)
{
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        const pure_crypto *c = backends[b];
        uint8_t key[131], out[32];
        const char *d6 = "Test Using Larger Than Block-Size Key - Hash Key First";
        /* Test case 1 */
        memset(key, 0x0b, 20);
        c->hmac(out, key, 20, (const uint8_t *)"Hi There", 8, NULL, 0);
        CHECK(pure_test_eq_hex(out, 32,
                               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
        /* Test case 2, the message split over both pieces */
        c->hmac(out, (const uint8_t *)"Jefe", 4, (const uint8_t *)"what do ya want ", 16,
                (const uint8_t *)"for nothing?", 12);
        CHECK(pure_test_eq_hex(out, 32,
                               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
        /* Test case 6: a key longer than the block is hashed first */
        memset(key, 0xaa, 131);
        c->hmac(out, key, 131, (const uint8_t *)d6, strlen(d6), NULL, 0);
        CHECK(pure_test_eq_hex(out, 32,
                               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
    }
}

static void test_hkdf(void)
{
    /* RFC 5869 test case 3 (salt empty = a 32-byte zero chaining key, since HMAC zero-pads its
     * key; info empty): Noise's HKDF is RFC 5869 with L = 64 and no info. */
    uint8_t ck[32] = {0}, ikm[22], o1[32], o2[32];
    memset(ikm, 0x0b, sizeof(ikm));
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        pure_hkdf2(backends[b], o1, o2, ck, ikm, sizeof(ikm));
        CHECK(pure_test_eq_hex(o1, 32,
                               "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"));
        CHECK(pure_test_eq_hex(o2, 10, "9d201395faa4b61a96c8"));
    }
    /* out1 may be the chaining key itself (MixKey updates ck in place). */
    memset(ck, 0, sizeof(ck));
    pure_hkdf2(&pure_crypto_openssl, ck, o2, ck, ikm, sizeof(ikm));
    CHECK(pure_test_eq_hex(ck, 32,
                           "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"));
    CHECK(pure_test_eq_hex(o2, 10, "9d201395faa4b61a96c8"));
}

/* RFC 7748's X25519 vectors on a real backend: OpenSSL, and the default's (Nettle where the build
 * has it). */
static void x25519_rfc7748(const pure_crypto *c)
{
    uint8_t a[32], b[32], pa[32], pb[32], s1[32], s2[32], k[32], u[32];
    pure_test_unhex(a, 32, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    pure_test_unhex(b, 32, "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
    CHECK_EQ(c->dh_public(pa, a), 0);
    CHECK_EQ(c->dh_public(pb, b), 0);
    CHECK(pure_test_eq_hex(pa, 32,
                           "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"));
    CHECK(pure_test_eq_hex(pb, 32,
                           "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"));
    CHECK_EQ(c->dh(s1, a, pb), 0);
    CHECK_EQ(c->dh(s2, b, pa), 0);
    CHECK(pure_test_eq_hex(s1, 32,
                           "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"));
    CHECK(memcmp(s1, s2, 32) == 0);
    /* Section 5.2, first vector (scalar clamping and a non-canonical high bit in u). */
    pure_test_unhex(k, 32, "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
    pure_test_unhex(u, 32, "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
    CHECK_EQ(c->dh(s1, k, u), 0);
    CHECK(pure_test_eq_hex(s1, 32,
                           "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"));
    /* Low-order points give an all-zero secret, which must be refused. */
    memset(u, 0, 32);
    CHECK_EQ(c->dh(s1, k, u), PURE_ECRYPTO);
    u[0] = 1;
    CHECK_EQ(c->dh(s1, k, u), PURE_ECRYPTO);
}

static void test_x25519_rfc7748(void)
{
    x25519_rfc7748(&pure_crypto_openssl);
    x25519_rfc7748(&pure_crypto_default);
}

static void test_null_dh(void)
{
    const pure_crypto *c = &pure_crypto_null;
    uint8_t a[32], b[32], pa[32], pb[32], s1[32], s2[32];
    pure_crypto_null_seed(7);
    c->random(a, 32);
    c->random(b, 32);
    CHECK(memcmp(a, b, 32) != 0);
    CHECK_EQ(c->dh_public(pa, a), 0);
    CHECK_EQ(c->dh_public(pb, b), 0);
    CHECK_EQ(c->dh(s1, a, pb), 0);
    CHECK_EQ(c->dh(s2, b, pa), 0);
    CHECK(memcmp(s1, s2, 32) == 0);
    CHECK_EQ(c->dh(s1, a, pa), PURE_ECRYPTO); /* all-zero result */
}

static void test_null_random_seeded(void)
{
    uint8_t x[40], y[40], z[40];
    pure_crypto_null_seed(42);
    pure_crypto_null.random(x, sizeof(x));
    pure_crypto_null_seed(42);
    pure_crypto_null.random(y, sizeof(y));
    pure_crypto_null_seed(43);
    pure_crypto_null.random(z, sizeof(z));
    CHECK(memcmp(x, y, sizeof(x)) == 0);
    CHECK(memcmp(x, z, sizeof(x)) != 0);
}

/* Seal with one context, open with another, for a NIST/McGrew-Viega GCM vector. */
static void gcm_vector_with(const pure_crypto *c, enum pure_aead_alg alg, const char *key,
                            const char *iv, const char *pt, const char *aad, const char *ct,
                            const char *tag)
{
    uint8_t k[32], n[12], p[64], ad[32], t[16], buf[64];
    size_t plen = pure_test_unhex(p, sizeof(p), pt), adlen = pure_test_unhex(ad, sizeof(ad), aad);
    pure_aead s, o;
    pure_test_unhex(k, sizeof(k), key);
    pure_test_unhex(n, sizeof(n), iv);
    CHECK_EQ(c->aead_init(&s, alg, k), 0);
    CHECK_EQ(c->aead_init(&o, alg, k), 0);
    memcpy(buf, p, plen);
    CHECK_EQ(c->aead_seal(&s, n, ad, adlen, buf, plen, t), 0);
    CHECK(pure_test_eq_hex(buf, plen, ct));
    CHECK(pure_test_eq_hex(t, 16, tag));
    CHECK_EQ(c->aead_open(&o, n, ad, adlen, buf, plen, t), 0);
    CHECK(memcmp(buf, p, plen) == 0);
    c->aead_free(&s);
    c->aead_free(&o);
    /* the same with the tag right after the data, as a packet lays it out (the in-place path) */
    uint8_t pkt[80];
    memcpy(pkt, p, plen);
    CHECK_EQ(c->aead_init(&s, alg, k), 0);
    CHECK_EQ(c->aead_seal(&s, n, ad, adlen, pkt, plen, pkt + plen), 0);
    CHECK(pure_test_eq_hex(pkt, plen, ct));
    CHECK(pure_test_eq_hex(pkt + plen, 16, tag));
    CHECK_EQ(c->aead_open(&s, n, ad, adlen, pkt, plen, pkt + plen), 0);
    CHECK(memcmp(pkt, p, plen) == 0);
    pkt[0] ^= 1;
    CHECK_EQ(c->aead_open(&s, n, ad, adlen, pkt, plen, pkt + plen), PURE_ECRYPTO);
    c->aead_free(&s);
}

/* Every real AES-GCM backend must give the specification's answers. */
static void gcm_vector(enum pure_aead_alg alg, const char *key, const char *iv, const char *pt,
                       const char *aad, const char *ct, const char *tag)
{
    gcm_vector_with(&pure_crypto_openssl, alg, key, iv, pt, aad, ct, tag);
    gcm_vector_with(&pure_crypto_default, alg, key, iv, pt, aad, ct, tag);
    gcm_vector_with(&gnutls_aead, alg, key, iv, pt, aad, ct, tag);
    if (alg == PURE_AEAD_AES128_GCM && pure_vaes_available())
        gcm_vector_with(&vaes_aead, alg, key, iv, pt, aad, ct, tag);
}

static void test_aes_gcm_vectors(void)
{
    /* GCM specification (McGrew & Viega) test cases 2, 4 (AES-128) and 16 (AES-256). */
    gcm_vector(PURE_AEAD_AES128_GCM, "00000000000000000000000000000000", "000000000000000000000000",
               "00000000000000000000000000000000", "", "0388dace60b6a392f328c2b971b2fe78",
               "ab6e47d42cec13bdf53a67b21257bddf");
    gcm_vector(PURE_AEAD_AES128_GCM, "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
               "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fc"
               "f0e2449a6b525b16aedf5aa0de657ba637b39",
               "feedfacedeadbeeffeedfacedeadbeefabaddad2",
               "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8"
               "f6a5aac84aa051ba30b396a0aac973d58e091",
               "5bc94fbc3221a5db94fae95ae7121a47");
    gcm_vector(PURE_AEAD_AES256_GCM,
               "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
               "cafebabefacedbaddecaf888",
               "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fc"
               "f0e2449a6b525b16aedf5aa0de657ba637b39",
               "feedfacedeadbeeffeedfacedeadbeefabaddad2",
               "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b"
               "08b1056828838c5f61e6393ba7a0abcc9f662",
               "76fc6ece0f4e1768cddf8853bb2d551b");
}

/* Flips every bit of data, ad, nonce and tag in turn: each must fail open with PURE_ECRYPTO. */
static void tamper(const pure_crypto *c, enum pure_aead_alg alg)
{
    uint8_t key[32], nonce[12], ad[13], msg[37], buf[37], tag[16];
    pure_aead a;
    int failures_missed = 0;
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)(i + 1);
    memset(nonce, 0x42, sizeof(nonce));
    memset(ad, 0x17, sizeof(ad));
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 31);
    CHECK_EQ(c->aead_init(&a, alg, key), 0);
    memcpy(buf, msg, sizeof(msg));
    CHECK_EQ(c->aead_seal(&a, nonce, ad, sizeof(ad), buf, sizeof(buf), tag), 0);
    if (c != &pure_crypto_null)
        CHECK(memcmp(buf, msg, sizeof(msg)) != 0); /* really encrypted */
    {
        uint8_t *parts[4] = {buf, ad, nonce, tag};
        size_t lens[4] = {sizeof(buf), sizeof(ad), sizeof(nonce), sizeof(tag)};
        uint8_t sealed[37];
        memcpy(sealed, buf, sizeof(buf));
        for (int p = 0; p < 4; p++)
            for (size_t bit = 0; bit < lens[p] * 8; bit++) {
                memcpy(buf, sealed, sizeof(buf));
                parts[p][bit / 8] ^= (uint8_t)(1u << (bit % 8));
                if (c->aead_open(&a, nonce, ad, sizeof(ad), buf, sizeof(buf), tag) != PURE_ECRYPTO)
                    failures_missed++;
                parts[p][bit / 8] ^= (uint8_t)(1u << (bit % 8));
            }
        CHECK_EQ(failures_missed, 0);
        /* Moving the ad/data boundary must fail too. */
        memcpy(buf, sealed, sizeof(buf));
        CHECK_EQ(c->aead_open(&a, nonce, ad, sizeof(ad) - 1, buf, sizeof(buf), tag), PURE_ECRYPTO);
        /* And the untouched packet still opens on the same context after all those failures. */
        memcpy(buf, sealed, sizeof(buf));
        CHECK_EQ(c->aead_open(&a, nonce, ad, sizeof(ad), buf, sizeof(buf), tag), 0);
        CHECK(memcmp(buf, msg, sizeof(msg)) == 0);
    }
    c->aead_free(&a);
    CHECK(a.impl == NULL);
}

static void test_tamper_both_backends(void)
{
    tamper(&pure_crypto_openssl, PURE_AEAD_AES128_GCM);
    tamper(&pure_crypto_openssl, PURE_AEAD_AES256_GCM);
    tamper(&pure_crypto_null, PURE_AEAD_AES128_GCM);
    tamper(&pure_crypto_null, PURE_AEAD_AES256_GCM);
    tamper(&pure_crypto_default, PURE_AEAD_AES128_GCM);
    tamper(&pure_crypto_default, PURE_AEAD_AES256_GCM);
    tamper(&gnutls_aead, PURE_AEAD_AES128_GCM);
    if (pure_vaes_available())
        tamper(&vaes_aead, PURE_AEAD_AES128_GCM);
}

/* A forged packet opened in place must leave no plaintext behind, on every backend: before,
 * GnuTLS's and OpenSSL's in-place opens decrypted first and checked the tag after, leaving the
 * unauthenticated plaintext in the caller's buffer (and the null backend, which does not
 * encrypt, left its data as it came). The seam's rule is that a failed open zeroes the data. */
static int leaves_plaintext(const uint8_t *buf, const uint8_t *pt, size_t len)
{
    if (len < 16)
        return len > 0 && memcmp(buf, pt, len) == 0;
    for (size_t i = 0; i + 16 <= len; i++) /* opened in place: plaintext sits where it was */
        if (memcmp(buf + i, pt + i, 16) == 0)
            return 1;
    return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

static void failed_open_with(const pure_crypto *c, enum pure_aead_alg alg, const char *what)
{
    static const size_t lens[] = {5, 16, 61, 1444, 3000};
    static uint8_t pt[3000], buf[3000 + 16];
    uint64_t r = 0x243f6a8885a308d3ull;
    for (size_t i = 0; i < sizeof pt; i++) /* no two 16-byte windows alike */
        pt[i] = (uint8_t)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 56);
    uint8_t key[32], nonce[12] = {7}, ad[13] = {1, 2, 3}, tag[16];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(0xa0 + i);
    int left = 0, not_refused = 0, not_zeroed = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int packet = 0; packet < 2; packet++) /* tag after the data (in place) or apart */
            for (int part = 0; part < 2; part++) { /* flip a tag bit or a ciphertext bit */
                size_t len = lens[li];
                uint8_t *t = packet ? buf + len : tag;
                pure_aead a;
                CHECK_EQ(c->aead_init(&a, alg, key), 0);
                memcpy(buf, pt, len);
                CHECK_EQ(c->aead_seal(&a, nonce, ad, sizeof ad, buf, len, t), 0);
                if (part == 0)
                    t[3] ^= 0x10;
                else
                    buf[len / 2] ^= 0x01;
                if (c->aead_open(&a, nonce, ad, sizeof ad, buf, len, t) != PURE_ECRYPTO)
                    not_refused++;
                if (leaves_plaintext(buf, pt, len))
                    left++;
                if (!all_zero(buf, len))
                    not_zeroed++;
                c->aead_free(&a);
            }
    if (left || not_refused || not_zeroed)
        fprintf(stderr, "%s alg %d: %d opens left plaintext, %d not refused, %d not zeroed\n", what,
                (int)alg, left, not_refused, not_zeroed);
    CHECK_EQ(not_refused, 0);
    CHECK_EQ(left, 0);
    CHECK_EQ(not_zeroed, 0);
}

static void test_failed_open_leaves_no_plaintext(void)
{
    for (int evp = 0; evp < 2; evp++) {
        pure_crypto_openssl_force_evp(evp);
        for (int alg = PURE_AEAD_AES128_GCM; alg <= PURE_AEAD_AES256_GCM; alg++) {
            failed_open_with(&pure_crypto_openssl, (enum pure_aead_alg)alg,
                             evp ? "openssl (EVP path)" : "openssl");
            if (evp)
                continue;
            failed_open_with(&pure_crypto_null, (enum pure_aead_alg)alg, "null");
            failed_open_with(&pure_crypto_default, (enum pure_aead_alg)alg, "default");
#ifdef PURE_HAVE_GNUTLS
            failed_open_with(&gnutls_aead, (enum pure_aead_alg)alg, "gnutls");
#endif
        }
    }
    pure_crypto_openssl_force_evp(0);
    if (pure_vaes_available())
        failed_open_with(&vaes_aead, PURE_AEAD_AES128_GCM, "vaes");
}

/* One context is reused for every packet and both directions: interleave seals and opens with
 * changing nonces and sizes, and check each against a fresh context's result. */
static void test_context_reuse(void)
{
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        const pure_crypto *c = backends[b];
        uint8_t key[16] = {9, 8, 7}, nonce[12] = {0}, ad[8] = {1, 2};
        uint8_t buf[1500], ref[1500], t1[16], t2[16];
        pure_aead shared, fresh;
        CHECK_EQ(c->aead_init(&shared, PURE_AEAD_AES128_GCM, key), 0);
        for (int i = 0; i < 50; i++) {
            size_t len = (size_t)(i * 29) % sizeof(buf);
            nonce[11] = (uint8_t)i;
            for (size_t j = 0; j < len; j++)
                buf[j] = (uint8_t)(i + j);
            memcpy(ref, buf, len);
            CHECK_EQ(c->aead_seal(&shared, nonce, ad, sizeof(ad), buf, len, t1), 0);
            CHECK_EQ(c->aead_init(&fresh, PURE_AEAD_AES128_GCM, key), 0);
            CHECK_EQ(c->aead_seal(&fresh, nonce, ad, sizeof(ad), ref, len, t2), 0);
            c->aead_free(&fresh);
            CHECK(memcmp(buf, ref, len) == 0 && memcmp(t1, t2, 16) == 0);
            CHECK_EQ(c->aead_open(&shared, nonce, ad, sizeof(ad), buf, len, t1), 0);
            for (size_t j = 0; j < len; j++)
                if (buf[j] != (uint8_t)(i + j)) {
                    CHECK(0);
                    break;
                }
        }
        /* Empty data and no ad: the tag alone authenticates the nonce. */
        CHECK_EQ(c->aead_seal(&shared, nonce, NULL, 0, NULL, 0, t1), 0);
        CHECK_EQ(c->aead_open(&shared, nonce, NULL, 0, NULL, 0, t1), 0);
        nonce[0] ^= 1;
        CHECK_EQ(c->aead_open(&shared, nonce, NULL, 0, NULL, 0, t1), PURE_ECRYPTO);
        c->aead_free(&shared);
    }
}

static void test_bad_arguments(void)
{
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        const pure_crypto *c = backends[b];
        uint8_t key[32] = {0};
        pure_aead a;
        CHECK_EQ(c->aead_init(&a, (enum pure_aead_alg)99, key), PURE_EINVAL);
        CHECK_EQ(c->aead_init(&a, PURE_AEAD_AES128_GCM, NULL), PURE_EINVAL);
        c->aead_free(NULL);
    }
}

static void test_wipe(void)
{
    uint8_t buf[64];
    memset(buf, 0xff, sizeof(buf));
    pure_wipe(buf + 8, 48);
    CHECK(buf[7] == 0xff && buf[56] == 0xff);
    for (int i = 8; i < 56; i++)
        CHECK(buf[i] == 0);
}

static void test_random(void)
{
    uint8_t a[32] = {0}, b[32] = {0};
    CHECK_EQ(pure_crypto_openssl.random(a, sizeof(a)), 0);
    CHECK_EQ(pure_crypto_openssl.random(b, sizeof(b)), 0);
    CHECK(memcmp(a, b, sizeof(a)) != 0);
}

/* The AEAD tests again with the OpenSSL backend on its EVP fallback path. */
static void test_evp_path(void)
{
    pure_crypto_openssl_force_evp(1);
    test_aes_gcm_vectors();
    test_tamper_both_backends();
    test_context_reuse();
    pure_crypto_openssl_force_evp(0);
}

/* A spy implementation: counts the calls the default backend forwards to it. */
static int spy_seals, spy_opens, spy_frees;
static int spy_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                    size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN])
{
    (void)a, (void)nonce, (void)ad, (void)adlen, (void)data, (void)len, (void)tag;
    return ++spy_seals;
}
static int spy_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                    size_t adlen, uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN])
{
    (void)a, (void)nonce, (void)ad, (void)adlen, (void)data, (void)len, (void)tag;
    return ++spy_opens;
}
static void spy_free(pure_aead *a)
{
    (void)a;
    spy_frees++;
}

/* The default backend (crypto_default.c) picks each context's AEAD once, at init: the VAES code
 * for AES-128-GCM where the CPU has it, else the library's (GnuTLS where built, else OpenSSL),
 * and the library's for AES-256-GCM; seal, open and free then follow the context's ops and
 * decide nothing again. A context never initialised (zeroed) or refused at init is refused. */
static void test_default_chooses_at_init(void)
{
#ifdef PURE_HAVE_GNUTLS
    const pure_aead_impl *library = &pure_aead_gnutls;
#else
    const pure_aead_impl *library = &pure_aead_openssl;
#endif
    const pure_crypto *c = &pure_crypto_default;
    uint8_t key[32] = {3, 1, 4}, nonce[12] = {0}, buf[64] = {0}, tag[16];
    pure_aead a = {0};
    CHECK_EQ(c->aead_init(&a, PURE_AEAD_AES128_GCM, key), 0);
    CHECK(a.ops == (pure_vaes_available() ? &pure_aead_vaes : library));
    c->aead_free(&a);
    CHECK(a.impl == NULL);
    CHECK_EQ(c->aead_init(&a, PURE_AEAD_AES256_GCM, key), 0);
    CHECK(a.ops == library);
    /* every later call goes where ops points, whatever the CPU or the algorithm */
    const pure_aead_impl *chosen = a.ops;
    pure_aead_impl spy = {"spy", NULL, spy_free, spy_seal, spy_open, NULL};
    a.ops = &spy;
    CHECK_EQ(c->aead_seal(&a, nonce, NULL, 0, buf, sizeof buf, tag), 1);
    CHECK_EQ(c->aead_open(&a, nonce, NULL, 0, buf, sizeof buf, tag), 1);
    c->aead_free(&a);
    CHECK_EQ(spy_frees, 1);
    a.ops = chosen;
    c->aead_free(&a);
    CHECK(a.impl == NULL);
    /* never initialised, and refused at init */
    pure_aead z = {0};
    CHECK_EQ(c->aead_seal(&z, nonce, NULL, 0, buf, sizeof buf, tag), PURE_EINVAL);
    CHECK_EQ(c->aead_open(&z, nonce, NULL, 0, buf, sizeof buf, tag), PURE_EINVAL);
    c->aead_free(&z);
    CHECK_EQ(c->aead_init(&z, (enum pure_aead_alg)7, key), PURE_EINVAL);
    CHECK(z.ops != NULL && z.impl == NULL);
    CHECK_EQ(c->aead_seal(&z, nonce, NULL, 0, buf, sizeof buf, tag), PURE_EINVAL);
    c->aead_free(&z);
}

/* pure_aead_seal_from (a packet's stream bytes sealed from the send ring) on every backend: the
 * default (out of place where the key's implementation can), OpenSSL's and the null one (no
 * aead_seal_from: the runs are copied in first) each give what sealing the whole plaintext in
 * place gives, for a ring's two pieces at odd offsets; bad runs are refused before anything is
 * sealed. */
static void test_seal_from_every_backend(void)
{
    const pure_crypto *all[] = {&pure_crypto_default, &pure_crypto_openssl, &pure_crypto_null};
    for (size_t b = 0; b < sizeof all / sizeof *all; b++) {
        const pure_crypto *c = all[b];
        uint8_t key[16] = {5, 5, 5}, nonce[12] = {1, 2, 3}, ad[13] = {9};
        static uint8_t plain[1500], want[1500], got[1500], ring[4096];
        for (size_t len = 0; len < sizeof plain; len += 37) {
            for (size_t i = 0; i < len; i++)
                plain[i] = (uint8_t)(i * 31 + len);
            /* a frame header of up to 11 bytes in the packet, then the ring's bytes in two pieces
             * (its end, then its start), then padding */
            size_t head = len < 11 ? len : 11, body = (len - head) * 3 / 4, cut = body / 3;
            memcpy(ring + sizeof ring - cut, plain + head, cut);
            memcpy(ring, plain + head + cut, body - cut);
            pure_aead_src runs[2] = {{ring + sizeof ring - cut, head, cut},
                                     {ring, head + cut, body - cut}};
            memcpy(want, plain, len);
            memcpy(got, plain, len);
            memset(got + head, 0x5A, body);
            pure_aead a1, a2;
            uint8_t t1[16], t2[16];
            CHECK_EQ(c->aead_init(&a1, PURE_AEAD_AES128_GCM, key), 0);
            CHECK_EQ(c->aead_init(&a2, PURE_AEAD_AES128_GCM, key), 0);
            CHECK_EQ(c->aead_seal(&a1, nonce, ad, sizeof ad, want, len, t1), 0);
            CHECK_EQ(pure_aead_seal_from(c, &a2, nonce, ad, sizeof ad, got, len, runs, 2, t2), 0);
            CHECK(memcmp(want, got, len) == 0 && memcmp(t1, t2, 16) == 0);
            CHECK_EQ(c->aead_open(&a2, nonce, ad, sizeof ad, got, len, t2), 0);
            CHECK(memcmp(got, plain, len) == 0);
            if (len > 20) {
                pure_aead_src bad[2] = {{ring, 5, 10}, {ring, 8, 2}};
                memcpy(got, want, len);
                CHECK_EQ(pure_aead_seal_from(c, &a2, nonce, ad, sizeof ad, got, len, bad, 2, t2),
                         PURE_EINVAL);
                CHECK(memcmp(got, want, len) == 0); /* nothing copied or sealed */
                bad[0] = (pure_aead_src){ring, len - 1, 2};
                CHECK_EQ(pure_aead_seal_from(c, &a2, nonce, ad, sizeof ad, got, len, bad, 1, t2),
                         PURE_EINVAL);
            }
            c->aead_free(&a1);
            c->aead_free(&a2);
        }
    }
}

int main(void)
{
    make_aead_tables();
    RUN(test_sha256);
    RUN(test_sha256_backends_agree);
    RUN(test_hmac_rfc4231);
    RUN(test_hkdf);
    RUN(test_x25519_rfc7748);
    RUN(test_null_dh);
    RUN(test_null_random_seeded);
    RUN(test_aes_gcm_vectors);
    RUN(test_tamper_both_backends);
    RUN(test_failed_open_leaves_no_plaintext);
    RUN(test_context_reuse);
    RUN(test_default_chooses_at_init);
    RUN(test_seal_from_every_backend);
    RUN(test_evp_path);
    RUN(test_bad_arguments);
    RUN(test_wipe);
    RUN(test_random);
    return pure_test_finish();
}

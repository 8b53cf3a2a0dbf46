/* SPDX-License-Identifier: MIT */
/* aead_bench: per-packet AEAD seal and open cost, the largest single cost of Pure's data path.
 *
 *   aead_bench [ms_per_point]      (default 30 ms; a whole run takes a few seconds)
 *   aead_bench count ROW SIZE N    (N seals of SIZE bytes with row ROW (0-based), untimed: run
 *                                   it under `valgrind --tool=callgrind` for two values of N to
 *                                   get instructions per packet, which a busy machine does not
 *                                   disturb the way it disturbs timings)
 *
 * For each implementation it times seal and open over a batch of packets at several sizes and
 * prints ns per packet at 61 and 1448 bytes (the drain's small-message packet and a full
 * 1500-MTU payload) and a least-squares fit ns = fixed + slope * bytes over all sizes. Rows:
 *   default aes128gcm  pure_crypto_default, AES-128-GCM (what transport packets use: the VAES
 *                      code where the CPU has it, else GnuTLS's)
 *   openssl aes128gcm  pure_crypto_openssl, AES-128-GCM (OpenSSL 3.0, provider called directly)
 *   openssl aes256gcm  pure_crypto_openssl, AES-256-GCM (Noise handshake messages)
 *   gnutls aes128gcm   src/crypto/aead_gnutls.c (when the build has GnuTLS)
 *   vaes aes128gcm     src/crypto/aead_vaes.c (VAES + VPCLMULQDQ; fails setup without them)
 *   evp aes128 lean    AES-128-GCM through EVP with the seam's fallback call sequence (one
 *                      context, nonce and direction via EVP_CipherInit_ex2, tag via params)
 *   evp chacha20poly   ChaCha20-Poly1305 through EVP with the seam's lean call sequence
 *   evp aes128 ctrl    AES-128-GCM, key kept, IV via EVP_EncryptInit_ex, tag via EVP ctrl
 *   evp aes128 rekey   AES-128-GCM re-initialised with its key for every packet (naive use)
 *   nettle gcm-aes128  Nettle's GCM-AES128 (loaded at run time if libnettle.so.8 is present)
 * Each point is the best of 3 timed rounds, to shed noise from other processes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "aead_vaes.h"
#include "crypto.h"
#ifdef PURE_HAVE_GNUTLS
#include "aead_gnutls.h"
#endif
#include "pure.h"

#if defined(__has_include)
#if __has_include(<nettle/gcm.h>)
#include <nettle/gcm.h>
#define HAVE_NETTLE_HEADERS 1
#endif
#endif

#define BATCH 128 /* packets per timed batch: 185 KiB at 1448 B, like a burst in flight */
#define MAXLEN 1448
static const size_t sizes[] = {61, 256, 512, 1024, 1448};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
static const uint8_t key[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static uint8_t bufs[BATCH][MAXLEN], tags[BATCH][16], ad[16];
static int ms_per_point = 30;

/* An implementation under test: seal/open one packet with packet number pn. */
typedef struct impl {
    const char *name;
    int (*setup)(struct impl *);
    int (*seal)(struct impl *, uint64_t pn, uint8_t *data, size_t len, uint8_t tag[16]);
    int (*open)(struct impl *, uint64_t pn, uint8_t *data, size_t len, const uint8_t tag[16]);
    void *state;
    const EVP_CIPHER *cipher;
} impl;

static void make_nonce(uint8_t nonce[12], uint64_t pn)
{
    memset(nonce, 0x5a, 4);
    for (int i = 0; i < 8; i++)
        nonce[4 + i] = (uint8_t)(pn >> (56 - 8 * i));
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- the seam ---- */

/* Seam rows: impl.state points at one of these (a backend and an algorithm). */
typedef struct seam_row {
    const pure_crypto *c;
    enum pure_aead_alg alg;
} seam_row;
static pure_aead seam_a;
static const pure_crypto *seam_c;
static int seam_setup(impl *m)
{
    const seam_row *r = m->state;
    if (seam_c)
        seam_c->aead_free(&seam_a); /* the previous row's key, if any */
    seam_c = r->c;
    return r->c->aead_init(&seam_a, r->alg, key);
}
static int seam_seal(impl *m, uint64_t pn, uint8_t *d, size_t len, uint8_t tag[16])
{
    (void)m;
    uint8_t n[12];
    make_nonce(n, pn);
    return seam_c->aead_seal(&seam_a, n, ad, sizeof(ad), d, len, tag);
}
static int seam_open(impl *m, uint64_t pn, uint8_t *d, size_t len, const uint8_t tag[16])
{
    (void)m;
    uint8_t n[12];
    make_nonce(n, pn);
    return seam_c->aead_open(&seam_a, n, ad, sizeof(ad), d, len, tag);
}

/* ---- EVP, lean sequence (the same calls as the seam, any cipher) ---- */

static EVP_CIPHER_CTX *evp_ctx;
static int lean_setup(impl *m)
{
    if (evp_ctx == NULL)
        evp_ctx = EVP_CIPHER_CTX_new();
    return EVP_CipherInit_ex2(evp_ctx, m->cipher, key, NULL, 1, NULL) == 1 ? 0 : -1;
}
static int lean_crypt(uint64_t pn, uint8_t *d, size_t len, uint8_t *tag, int enc)
{
    uint8_t n[12], fin[16];
    OSSL_PARAM p[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, 16),
                       OSSL_PARAM_construct_end()};
    int outl;
    make_nonce(n, pn);
    if (EVP_CipherInit_ex2(evp_ctx, NULL, NULL, n, enc, NULL) != 1)
        return -1;
    if (!enc && EVP_CIPHER_CTX_set_params(evp_ctx, p) != 1)
        return -1;
    if (EVP_CipherUpdate(evp_ctx, NULL, &outl, ad, sizeof(ad)) != 1 ||
        EVP_CipherUpdate(evp_ctx, d, &outl, d, (int)len) != 1 ||
        EVP_CipherFinal_ex(evp_ctx, fin, &outl) != 1)
        return -1;
    if (enc && EVP_CIPHER_CTX_get_params(evp_ctx, p) != 1)
        return -1;
    return 0;
}
static int lean_seal(impl *m, uint64_t pn, uint8_t *d, size_t len, uint8_t tag[16])
{
    return lean_crypt(pn, d, len, tag, 1);
}
static int lean_open(impl *m, uint64_t pn, uint8_t *d, size_t len, const uint8_t tag[16])
{
    return lean_crypt(pn, d, len, (uint8_t *)tag, 0);
}

/* ---- EVP, the textbook sequence: Encrypt/Decrypt init with NULL key, ctrl for the tag ---- */

static EVP_CIPHER_CTX *ctrl_enc, *ctrl_dec;
static int ctrl_setup(impl *m)
{
    if (ctrl_enc == NULL) {
        ctrl_enc = EVP_CIPHER_CTX_new();
        ctrl_dec = EVP_CIPHER_CTX_new();
    }
    return EVP_EncryptInit_ex(ctrl_enc, EVP_aes_128_gcm(), NULL, key, NULL) == 1 &&
                   EVP_DecryptInit_ex(ctrl_dec, EVP_aes_128_gcm(), NULL, key, NULL) == 1
               ? 0
               : -1;
}
/* One packet through the ctrl sequence; with m->state set (the "rekey" row) the key is scheduled
 * again for every packet, as a naive caller would. */
static int ctrl_seal(impl *m, uint64_t pn, uint8_t *d, size_t len, uint8_t tag[16])
{
    uint8_t n[12], fin[16];
    int outl;
    const EVP_CIPHER *c = m->state ? EVP_aes_128_gcm() : NULL;
    make_nonce(n, pn);
    return EVP_EncryptInit_ex(ctrl_enc, c, NULL, c ? key : NULL, n) == 1 &&
                   EVP_EncryptUpdate(ctrl_enc, NULL, &outl, ad, sizeof(ad)) == 1 &&
                   EVP_EncryptUpdate(ctrl_enc, d, &outl, d, (int)len) == 1 &&
                   EVP_EncryptFinal_ex(ctrl_enc, fin, &outl) == 1 &&
                   EVP_CIPHER_CTX_ctrl(ctrl_enc, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1
               ? 0
               : -1;
}
static int ctrl_open(impl *m, uint64_t pn, uint8_t *d, size_t len, const uint8_t tag[16])
{
    uint8_t n[12], fin[16];
    int outl;
    const EVP_CIPHER *c = m->state ? EVP_aes_128_gcm() : NULL;
    make_nonce(n, pn);
    return EVP_DecryptInit_ex(ctrl_dec, c, NULL, c ? key : NULL, n) == 1 &&
                   EVP_CIPHER_CTX_ctrl(ctrl_dec, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) == 1 &&
                   EVP_DecryptUpdate(ctrl_dec, NULL, &outl, ad, sizeof(ad)) == 1 &&
                   EVP_DecryptUpdate(ctrl_dec, d, &outl, d, (int)len) == 1 &&
                   EVP_DecryptFinal_ex(ctrl_dec, fin, &outl) == 1
               ? 0
               : -1;
}

/* ---- Nettle, loaded with dlopen so that neither the build nor the library needs it ---- */

#ifdef HAVE_NETTLE_HEADERS
static struct {
    void (*set_key)(struct gcm_aes128_ctx *, const uint8_t *);
    void (*set_iv)(struct gcm_aes128_ctx *, size_t, const uint8_t *);
    void (*update)(struct gcm_aes128_ctx *, size_t, const uint8_t *);
    void (*encrypt)(struct gcm_aes128_ctx *, size_t, uint8_t *, const uint8_t *);
    void (*decrypt)(struct gcm_aes128_ctx *, size_t, uint8_t *, const uint8_t *);
    void (*digest)(struct gcm_aes128_ctx *, size_t, uint8_t *);
} nt;
static struct gcm_aes128_ctx nctx;

static int nettle_setup(impl *m)
{
    void *h = dlopen("libnettle.so.8", RTLD_NOW);
    if (h == NULL)
        return -1;
    *(void **)&nt.set_key = dlsym(h, "nettle_gcm_aes128_set_key");
    *(void **)&nt.set_iv = dlsym(h, "nettle_gcm_aes128_set_iv");
    *(void **)&nt.update = dlsym(h, "nettle_gcm_aes128_update");
    *(void **)&nt.encrypt = dlsym(h, "nettle_gcm_aes128_encrypt");
    *(void **)&nt.decrypt = dlsym(h, "nettle_gcm_aes128_decrypt");
    *(void **)&nt.digest = dlsym(h, "nettle_gcm_aes128_digest");
    if (!nt.set_key || !nt.set_iv || !nt.update || !nt.encrypt || !nt.decrypt || !nt.digest)
        return -1;
    nt.set_key(&nctx, key);
    return 0;
}
static int nettle_seal(impl *m, uint64_t pn, uint8_t *d, size_t len, uint8_t tag[16])
{
    uint8_t n[12];
    make_nonce(n, pn);
    nt.set_iv(&nctx, 12, n);
    nt.update(&nctx, sizeof(ad), ad);
    nt.encrypt(&nctx, len, d, d);
    nt.digest(&nctx, 16, tag);
    return 0;
}
static int nettle_open(impl *m, uint64_t pn, uint8_t *d, size_t len, const uint8_t tag[16])
{
    uint8_t n[12], want[16], diff = 0;
    make_nonce(n, pn);
    nt.set_iv(&nctx, 12, n);
    nt.update(&nctx, sizeof(ad), ad);
    nt.decrypt(&nctx, len, d, d);
    nt.digest(&nctx, 16, want);
    for (int i = 0; i < 16; i++)
        diff |= want[i] ^ tag[i];
    return diff ? -1 : 0;
}
#endif

/* Times one batch operation repeatedly for about ms_per_point; returns ns per packet (best of
 * three rounds). Opening needs freshly sealed packets, so each open round re-seals untimed. */
static double time_op(impl *m, size_t len, int open)
{
    double best = 1e30;
    uint64_t pn = 0;
    for (int round = 0; round < 3; round++) {
        double spent = 0;
        long packets = 0;
        while (spent < ms_per_point * 1e6 / 3) {
            if (open)
                for (int i = 0; i < BATCH; i++)
                    if (m->seal(m, pn + i, bufs[i], len, tags[i]) != 0)
                        return -1;
            double t0 = now_ns();
            for (int i = 0; i < BATCH; i++) {
                int rc = open ? m->open(m, pn + i, bufs[i], len, tags[i])
                              : m->seal(m, pn + BATCH + i, bufs[i], len, tags[i]);
                if (rc != 0)
                    return -1;
            }
            spent += now_ns() - t0;
            packets += BATCH;
            pn += 2 * BATCH;
        }
        if (spent / packets < best)
            best = spent / packets;
    }
    return best;
}

/* Least-squares line through (size, ns). */
static void fit(const double *ns, double *fixed, double *slope)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, n = NSIZES;
    for (size_t i = 0; i < NSIZES; i++) {
        sx += (double)sizes[i];
        sy += ns[i];
        sxx += (double)sizes[i] * (double)sizes[i];
        sxy += (double)sizes[i] * ns[i];
    }
    *slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    *fixed = (sy - *slope * sx) / n;
}

static void run(impl *m)
{
    double ns[2][NSIZES];
    if (m->setup(m) != 0) {
        printf("%-19s unavailable\n", m->name);
        return;
    }
    for (int op = 0; op < 2; op++)
        for (size_t s = 0; s < NSIZES; s++)
            if ((ns[op][s] = time_op(m, sizes[s], op)) < 0) {
                printf("%-19s FAILED (a %s returned an error)\n", m->name, op ? "open" : "seal");
                return;
            }
    for (int op = 0; op < 2; op++) {
        double fixed, slope;
        fit(ns[op], &fixed, &slope);
        printf("%-19s %-4s %9.1f %9.1f %9.1f %10.3f %8.2f\n", m->name, op ? "open" : "seal",
               ns[op][0], ns[op][NSIZES - 1], fixed, slope, 1448 / ns[op][NSIZES - 1]);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static pure_crypto vaes_c, gnutls_c;
    static int rekey = 1;
    vaes_c = gnutls_c = pure_crypto_openssl;
    vaes_c.aead_init = pure_vaes_aead_init;
    vaes_c.aead_free = pure_vaes_aead_free;
    vaes_c.aead_seal = pure_vaes_aead_seal;
    vaes_c.aead_open = pure_vaes_aead_open;
#ifdef PURE_HAVE_GNUTLS
    gnutls_c.aead_init = pure_gnutls_aead_init;
    gnutls_c.aead_free = pure_gnutls_aead_free;
    gnutls_c.aead_seal = pure_gnutls_aead_seal;
    gnutls_c.aead_open = pure_gnutls_aead_open;
#endif
    static seam_row r_default = {&pure_crypto_default, PURE_AEAD_AES128_GCM},
                    r_ossl = {&pure_crypto_openssl, PURE_AEAD_AES128_GCM},
                    r_ossl256 = {&pure_crypto_openssl, PURE_AEAD_AES256_GCM},
                    r_gnutls = {&gnutls_c, PURE_AEAD_AES128_GCM},
                    r_vaes = {&vaes_c, PURE_AEAD_AES128_GCM};
    impl impls[] = {
        {"default aes128gcm", seam_setup, seam_seal, seam_open, &r_default, NULL},
        {"openssl aes128gcm", seam_setup, seam_seal, seam_open, &r_ossl, NULL},
        {"openssl aes256gcm", seam_setup, seam_seal, seam_open, &r_ossl256, NULL},
        {"gnutls aes128gcm", seam_setup, seam_seal, seam_open, &r_gnutls, NULL},
        {"vaes aes128gcm", seam_setup, seam_seal, seam_open, &r_vaes, NULL},
        {"evp aes128 lean", lean_setup, lean_seal, lean_open, NULL, NULL},
        {"evp chacha20poly", lean_setup, lean_seal, lean_open, NULL, NULL},
        {"evp aes128 ctrl", ctrl_setup, ctrl_seal, ctrl_open, NULL, NULL},
        {"evp aes128 rekey", ctrl_setup, ctrl_seal, ctrl_open, &rekey, NULL},
#ifdef HAVE_NETTLE_HEADERS
        {"nettle gcm-aes128", nettle_setup, nettle_seal, nettle_open, NULL, NULL},
#endif
    };
    size_t nimpls = sizeof(impls) / sizeof(impls[0]);
    impls[5].cipher = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    impls[6].cipher = EVP_CIPHER_fetch(NULL, "ChaCha20-Poly1305", NULL);
    if (argc == 5 && strcmp(argv[1], "count") == 0) {
        size_t row = (size_t)atoi(argv[2]), len = (size_t)atoi(argv[3]);
        long n = atol(argv[4]);
        if (row >= nimpls || len > MAXLEN || impls[row].setup(&impls[row]) != 0)
            return 2;
        for (long i = 0; i < n; i++)
            if (impls[row].seal(&impls[row], (uint64_t)i, bufs[0], len, tags[0]) != 0)
                return 1;
        printf("%s: %ld seals of %zu bytes\n", impls[row].name, n, len);
        return 0;
    }
    if (argc > 1)
        ms_per_point = atoi(argv[1]) > 0 ? atoi(argv[1]) : 30;
    for (int i = 0; i < BATCH; i++)
        memset(bufs[i], i, MAXLEN);
    printf("# ns per packet (16-byte ad, batch of %d packets, best of 3 x %d ms)\n", BATCH,
           ms_per_point / 3);
    printf("%-19s %-4s %9s %9s %9s %10s %8s\n", "implementation", "op", "61 B", "1448 B", "fixed",
           "ns/byte", "GB/s@1448");
    for (size_t i = 0; i < nimpls; i++)
        run(&impls[i]);
#ifndef HAVE_NETTLE_HEADERS
    printf("%-19s skipped (nettle-dev headers not installed)\n", "nettle gcm-aes128");
#endif
    if (seam_c)
        seam_c->aead_free(&seam_a);
    EVP_CIPHER_CTX_free(evp_ctx);
    EVP_CIPHER_CTX_free(ctrl_enc);
    EVP_CIPHER_CTX_free(ctrl_dec);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/* aead_vaes.c: AES-128-GCM with VAES and VPCLMULQDQ on 512-bit registers, the transport AEAD of
 * the default backend on CPUs that have them (x86-64 with AVX-512F/BW/VL, VAES, VPCLMULQDQ).
 *
 * Why: every packet is sealed once and opened once, so a transport pays the AEAD's fixed cost
 * per call twice per packet, and its per-byte cost on every byte. GnuTLS's AES-GCM (the previous
 * default) costs ~1,170 instructions for a 61-byte packet and ~4,150 for 1,444 bytes; OpenSSL
 * 3.0's EVP path ~2,700 and ~5,600. This file does four blocks per instruction: counter blocks
 * are made and encrypted four to a register, sixteen at a time; GHASH multiplies sixteen blocks
 * by the powers H^16..H^1 and reduces once per sixteen. Whole-packet calls have no
 * per-call setup beyond loading the key schedule.
 *
 * Layout conventions (GCM, NIST SP 800-38D):
 *   - counter blocks are nonce (12 bytes) || be32(counter), the first for data being 2; the tag
 *     is E(K, nonce || be32(1)) xor GHASH(H, ad, ciphertext);
 *   - GHASH runs on byte-reversed blocks, where the field's bit order becomes a plain
 *     carry-less product shifted by one bit (the shift and the reduction modulo
 *     x^128 + x^7 + x^2 + x + 1 are done together in gf_reduce, once per sixteen blocks: both
 *     are linear, so the unreduced products of many blocks can be summed first);
 *   - partial blocks use masked loads and stores: a masked load zero-fills, which is exactly
 *     GHASH's padding of a last partial block.
 *
 * Constant time: AES rounds are instructions (no tables), GHASH is carry-less multiplication,
 * and the tag is compared with one vector test; opening checks the tag before it decrypts, so
 * a forged packet is never decrypted (its buffer is zeroed, the seam's rule for every backend). */
#include "aead_vaes.h"

#include <stdlib.h>
#include <string.h>

#include "pure.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#define TARGET                                                                                     \
    __attribute__((target("avx512f,avx512bw,avx512vl,vaes,vpclmulqdq,aes,pclmul,sse4.1")))

/* Powers of H for one-reduction hashing: up to 16 blocks with the powers every key keeps; up to
 * PMAX (a whole packet of a 1,500-byte path: ad, 92 data blocks and the lengths block) with a
 * table a key makes on its first long input; longer inputs reduce every sixteen blocks. */
#define PMAX 96

/* One key: 512 bytes while a link only exchanges small packets (100,000 links waking at once
 * schedule 200,000 of these: their memory is page faults), plus 1.6 KB once it sends long ones. */
typedef struct vaes_key {
    __m128i rk[11]; /* AES-128 round keys (broadcast to four lanes where used) */
    __m128i pw[20]; /* pw[16 - e] = H^e (byte-reversed domain), e = 1..16; pw[16..19] zero, so
                       a four-lane load past a region's last block multiplies zero lanes */
    __m128i *big;   /* NULL, or big[PMAX - e] = H^e for e = 1..npow, then four zeros */
    uint32_t npow;  /* powers in big */
} vaes_key;

static const uint8_t bswap_bytes[16] = {15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};

/* Zeroes key material held in vector locals (a multiple of 64 bytes at a 64-byte aligned p, or
 * 16 bytes) before they go out of scope. Volatile vector stores: the compiler can neither drop
 * them as dead (pure_wipe's rule) nor make them a memset (rep stos costs more than eleven
 * stores, and this runs on every packet). */
TARGET static inline void wipe_vec(void *p, size_t n)
{
    if (n == 16) {
        *(volatile __m128i *)p = _mm_setzero_si128();
        return;
    }
    volatile __m512i *v = p;
    for (size_t i = 0; i < n / 64; i++)
        v[i] = _mm512_setzero_si512();
}

/* CPUID and XGETBV directly (compilers differ in which names __builtin_cpu_supports knows):
 * the instructions, and an OS that saves the AVX-512 registers (XCR0 bits 1, 2, 5, 6, 7). */
int pure_vaes_available(void)
{
    static int known = -1;
    if (known < 0) {
        unsigned a, b, c, d;
        int ok = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_AES) && (c & bit_PCLMUL) &&
                 (c & bit_OSXSAVE);
        if (ok) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            ok = (lo & 0xe6) == 0xe6;
        }
        ok = ok && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 16)) /* AVX512F */ &&
             (b & (1u << 30)) /* AVX512BW */ && (b & (1u << 31)) /* AVX512VL */ &&
             (c & (1u << 9)) /* VAES */ && (c & (1u << 10)) /* VPCLMULQDQ */;
        known = ok;
    }
    return known;
}

/* (lo, hi) are 256-bit carry-less products of two byte-reversed field elements, one per 128-bit
 * lane: shift each left one bit (the reversed domain's product is one bit short) and reduce it
 * modulo the GCM polynomial, lane by lane. */
TARGET static inline __m512i gf_reduce4(__m512i lo, __m512i hi)
{
    __m512i c_lo = _mm512_srli_epi32(lo, 31), c_hi = _mm512_srli_epi32(hi, 31);
    lo = _mm512_slli_epi32(lo, 1);
    hi = _mm512_slli_epi32(hi, 1);
    __m512i carry_mid = _mm512_bsrli_epi128(c_lo, 12);
    c_hi = _mm512_bslli_epi128(c_hi, 4);
    c_lo = _mm512_bslli_epi128(c_lo, 4);
    lo = _mm512_or_si512(lo, c_lo);
    hi = _mm512_or_si512(_mm512_or_si512(hi, c_hi), carry_mid);
    __m512i a =
        _mm512_xor_si512(_mm512_xor_si512(_mm512_slli_epi32(lo, 31), _mm512_slli_epi32(lo, 30)),
                         _mm512_slli_epi32(lo, 25));
    __m512i spill = _mm512_bsrli_epi128(a, 4);
    lo = _mm512_xor_si512(lo, _mm512_bslli_epi128(a, 12));
    __m512i b =
        _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi32(lo, 1), _mm512_srli_epi32(lo, 2)),
                         _mm512_srli_epi32(lo, 7));
    b = _mm512_xor_si512(b, spill);
    return _mm512_xor_si512(hi, _mm512_xor_si512(lo, b));
}

/* gf_reduce4 on one lane. */
TARGET static inline __m128i gf_reduce(__m128i lo, __m128i hi)
{
    return _mm512_castsi512_si128(
        gf_reduce4(_mm512_zextsi128_si512(lo), _mm512_zextsi128_si512(hi)));
}

TARGET static inline __m128i gf_mul(__m128i a, __m128i b)
{
    __m128i lo = _mm_clmulepi64_si128(a, b, 0x00), hi = _mm_clmulepi64_si128(a, b, 0x11);
    __m128i mid = _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10));
    lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
    hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
    return gf_reduce(lo, hi);
}

TARGET static inline __m128i fold4(__m512i v)
{
    __m256i a = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    return _mm_xor_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
}

/* Sums of four lanes' unreduced products, folded and reduced. */
TARGET static inline __m128i gf_fold_reduce(__m512i lo, __m512i mid, __m512i hi)
{
    __m128i l = fold4(lo), m = fold4(mid), h = fold4(hi);
    l = _mm_xor_si128(l, _mm_slli_si128(m, 8));
    h = _mm_xor_si128(h, _mm_srli_si128(m, 8));
    return gf_reduce(l, h);
}

/* Four independent field products, lane by lane. */
TARGET static inline __m512i gf_mul4(__m512i a, __m512i b)
{
    __m512i lo = _mm512_clmulepi64_epi128(a, b, 0x00), hi = _mm512_clmulepi64_epi128(a, b, 0x11);
    __m512i mid = _mm512_xor_si512(_mm512_clmulepi64_epi128(a, b, 0x01),
                                   _mm512_clmulepi64_epi128(a, b, 0x10));
    lo = _mm512_xor_si512(lo, _mm512_bslli_epi128(mid, 8));
    hi = _mm512_xor_si512(hi, _mm512_bsrli_epi128(mid, 8));
    return gf_reduce4(lo, hi);
}

/* The powers table for n blocks, hp[g] = H^(n-g) for g < n and zeros after: the small table for
 * n <= 16; else the large one, made (four powers per step: the lanes [H^(e+7) .. H^(e+4)] are
 * [H^(e+3) .. H^e] times H^4) up to n. NULL if n > PMAX or its memory cannot be had. */
TARGET static const __m128i *powers(vaes_key *k, size_t n)
{
    if (n <= 16)
        return &k->pw[16 - n];
    if (n > PMAX)
        return NULL;
    if (k->big == NULL) {
        k->big = aligned_alloc(64, (PMAX + 4) * sizeof(__m128i));
        if (k->big == NULL)
            return NULL;
        memcpy(&k->big[PMAX - 16], k->pw, 20 * sizeof(__m128i)); /* H^16..H^1 and the zeros */
        k->npow = 16;
    }
    const __m512i h4 = _mm512_broadcast_i32x4(k->pw[12]);
    while (k->npow < n) {                                           /* npow is a multiple of 4 */
        __m512i prev = _mm512_loadu_si512(&k->big[PMAX - k->npow]); /* H^npow .. H^(npow-3) */
        _mm512_storeu_si512(&k->big[PMAX - k->npow - 4], gf_mul4(prev, h4));
        k->npow += 4;
    }
    return &k->big[PMAX - n];
}

#define MUL_ACC(d, h)                                                                              \
    do {                                                                                           \
        lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(d, h, 0x00));                           \
        hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(d, h, 0x11));                           \
        mid = _mm512_xor_si512(mid, _mm512_xor_si512(_mm512_clmulepi64_epi128(d, h, 0x01),         \
                                                     _mm512_clmulepi64_epi128(d, h, 0x10)));       \
    } while (0)

static inline __mmask64 mask_for(size_t n)
{
    return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
}

/* y = GHASH state (byte-reversed) after absorbing n bytes at p, the last block zero-padded,
 * reducing every sixteen blocks: for inputs longer than PMAX blocks. */
TARGET static __m128i ghash(const vaes_key *k, __m128i y, const uint8_t *p, size_t n)
{
    const __m512i bs = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)bswap_bytes));
    const __m128i *h16 = k->pw; /* H^16 .. H^1 */
    const __m512i h0 = _mm512_loadu_si512(&h16[0]), h1 = _mm512_loadu_si512(&h16[4]),
                  h2 = _mm512_loadu_si512(&h16[8]), h3 = _mm512_loadu_si512(&h16[12]);
    while (n >= 256) {
        __m512i d0 = _mm512_shuffle_epi8(_mm512_loadu_si512(p), bs);
        __m512i d1 = _mm512_shuffle_epi8(_mm512_loadu_si512(p + 64), bs);
        __m512i d2 = _mm512_shuffle_epi8(_mm512_loadu_si512(p + 128), bs);
        __m512i d3 = _mm512_shuffle_epi8(_mm512_loadu_si512(p + 192), bs);
        d0 = _mm512_xor_si512(d0, _mm512_zextsi128_si512(y));
        __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
        MUL_ACC(d0, h0);
        MUL_ACC(d1, h1);
        MUL_ACC(d2, h2);
        MUL_ACC(d3, h3);
        y = gf_fold_reduce(lo, mid, hi);
        p += 256;
        n -= 256;
    }
    if (n) {
        size_t nb = (n + 15) / 16; /* 1..16 blocks, block j times H^(nb-j) */
        const __m128i *hp = &h16[16 - nb];
        __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
        for (size_t j = 0; j < nb; j += 4) {
            __m512i d =
                _mm512_shuffle_epi8(_mm512_maskz_loadu_epi8(mask_for(n - 16 * j), p + 16 * j), bs);
            if (j == 0)
                d = _mm512_xor_si512(d, _mm512_zextsi128_si512(y));
            __m512i h = _mm512_loadu_si512(hp + j);
            MUL_ACC(d, h);
        }
        y = gf_fold_reduce(lo, mid, hi);
    }
    return y;
}

#define AES_ROUNDS4(c0, c1, c2, c3)                                                                \
    do {                                                                                           \
        c0 = _mm512_xor_si512(c0, K[0]);                                                           \
        c1 = _mm512_xor_si512(c1, K[0]);                                                           \
        c2 = _mm512_xor_si512(c2, K[0]);                                                           \
        c3 = _mm512_xor_si512(c3, K[0]);                                                           \
        for (int r = 1; r < 10; r++) {                                                             \
            c0 = _mm512_aesenc_epi128(c0, K[r]);                                                   \
            c1 = _mm512_aesenc_epi128(c1, K[r]);                                                   \
            c2 = _mm512_aesenc_epi128(c2, K[r]);                                                   \
            c3 = _mm512_aesenc_epi128(c3, K[r]);                                                   \
        }                                                                                          \
        c0 = _mm512_aesenclast_epi128(c0, K[10]);                                                  \
        c1 = _mm512_aesenclast_epi128(c1, K[10]);                                                  \
        c2 = _mm512_aesenclast_epi128(c2, K[10]);                                                  \
        c3 = _mm512_aesenclast_epi128(c3, K[10]);                                                  \
    } while (0)

/* The 64 bits [lo, hi) of a mask, 0 <= lo <= hi <= 64. */
static inline __mmask64 mask_range(size_t lo, size_t hi)
{
    return mask_for(hi) & ~mask_for(lo);
}

/* A cursor over the runs of one packet (crypto.h's pure_aead_src), in order of at. */
typedef struct runs_cursor {
    const pure_aead_src *r;
    const pure_aead_src *end;
} runs_cursor;

/* The plaintext of the n <= 64 bytes at offset o of data (the rest of the register zero): read in
 * place where no run covers them, from a run's source where one does. The common windows (all
 * in place, or all inside one run) take one load; a window where regions meet takes one masked
 * load per region (a masked load touches no byte outside its mask, so the address of a run's
 * window may lie before or after the run's source). */
TARGET static inline __m512i window(const uint8_t *data, size_t o, size_t n, runs_cursor *c)
{
    while (c->r < c->end && c->r->at + c->r->len <= o)
        c->r++;
    __mmask64 all = mask_for(n);
    if (c->r == c->end || c->r->at >= o + n)
        return _mm512_maskz_loadu_epi8(all, data + o);
    if (c->r->at <= o && c->r->at + c->r->len >= o + n)
        return _mm512_maskz_loadu_epi8(all, (const void *)((uintptr_t)c->r->src + (o - c->r->at)));
    __m512i v = _mm512_setzero_si512();
    __mmask64 taken = 0;
    for (const pure_aead_src *r = c->r; r < c->end && r->at < o + n; r++) {
        size_t lo = r->at > o ? r->at - o : 0;
        size_t hi = r->at + r->len < o + n ? r->at + r->len - o : n;
        __mmask64 m = mask_range(lo, hi);
        const void *from = (const void *)((uintptr_t)r->src - r->at + o);
        v = _mm512_or_si512(v, _mm512_maskz_loadu_epi8(m, from));
        taken |= m;
    }
    return _mm512_or_si512(v, _mm512_maskz_loadu_epi8(all & ~taken, data + o));
}

/* Where the 256 bytes at offset o of data come from when they are all in place or all in one
 * run (data + o, or that run's source there), else NULL (fewer than 256 bytes left, or regions
 * meet inside them: one register at a time then). */
static inline const uint8_t *whole_chunk(const uint8_t *data, size_t o, size_t len, runs_cursor *c)
{
    if (len - o < 256)
        return NULL;
    while (c->r < c->end && c->r->at + c->r->len <= o)
        c->r++;
    if (c->r == c->end || c->r->at >= o + 256)
        return data + o;
    if (c->r->at <= o && c->r->at + c->r->len >= o + 256)
        return c->r->src + (o - c->r->at);
    return NULL;
}

/* Encrypts (or decrypts) len bytes at data in CTR mode, counters 2, 3, ... under nonce, in place
 * except that each run's bytes are read from its source: data[runs[i].at, + runs[i].len) =
 * runs[i].src xor the keystream there. Runs are in order and do not overlap (the caller checked).
 * One pass over the packet: every keystream block is made once, whichever region it covers. */
TARGET static void ctr(const vaes_key *k, const uint8_t nonce[PURE_NONCE_LEN], uint8_t *data,
                       size_t len, const pure_aead_src *runs, size_t nruns)
{
    __m512i K[11];
    for (int r = 0; r < 11; r++)
        K[r] = _mm512_broadcast_i32x4(k->rk[r]);
    const __m512i bs = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)bswap_bytes));
    uint8_t b[16];
    memcpy(b, nonce, 12);
    b[12] = 0, b[13] = 0, b[14] = 0, b[15] = 2;
    /* byte-reversed, the be32 counter is each lane's low dword: add to it, swap back */
    __m512i rev = _mm512_broadcast_i32x4(_mm_shuffle_epi8(
        _mm_loadu_si128((const __m128i *)b), _mm_loadu_si128((const __m128i *)bswap_bytes)));
    rev = _mm512_add_epi32(rev, _mm512_set_epi32(0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0));
    const __m512i four = _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4);
    runs_cursor cur = {runs, runs + nruns};
    size_t o = 0;
    while (o < len) {
        __m512i r1 = _mm512_add_epi32(rev, four), r2 = _mm512_add_epi32(r1, four),
                r3 = _mm512_add_epi32(r2, four);
        __m512i c0 = _mm512_shuffle_epi8(rev, bs), c1 = _mm512_shuffle_epi8(r1, bs),
                c2 = _mm512_shuffle_epi8(r2, bs), c3 = _mm512_shuffle_epi8(r3, bs);
        rev = _mm512_add_epi32(r3, four);
        AES_ROUNDS4(c0, c1, c2, c3);
        const uint8_t *from = whole_chunk(data, o, len, &cur);
        if (from) {
            uint8_t *p = data + o;
            _mm512_storeu_si512(p, _mm512_xor_si512(_mm512_loadu_si512(from), c0));
            _mm512_storeu_si512(p + 64, _mm512_xor_si512(_mm512_loadu_si512(from + 64), c1));
            _mm512_storeu_si512(p + 128, _mm512_xor_si512(_mm512_loadu_si512(from + 128), c2));
            _mm512_storeu_si512(p + 192, _mm512_xor_si512(_mm512_loadu_si512(from + 192), c3));
            o += 256;
            continue;
        }
        /* a register at a time: the keystream moves down c3 -> c0 rather than through an
         * array, which would put it on the stack */
        for (int j = 0; j < 4 && o < len; j++) {
            size_t n = len - o < 64 ? len - o : 64;
            __m512i v =
                nruns ? window(data, o, n, &cur) : _mm512_maskz_loadu_epi8(mask_for(n), data + o);
            _mm512_mask_storeu_epi8(data + o, mask_for(n), _mm512_xor_si512(v, c0));
            o += n;
            c0 = c1, c1 = c2, c2 = c3;
        }
    }
    wipe_vec(K, sizeof K); /* the round keys, broadcast on the stack */
}

/* Adds the products of a region's blocks (n bytes at p, zero-padded) with hp[0], hp[1], ... to
 * the accumulators. */
#define REGION(p, n, hp)                                                                           \
    do {                                                                                           \
        for (size_t j_ = 0; 16 * j_ < (n); j_ += 4) {                                              \
            __m512i d_ = _mm512_shuffle_epi8(                                                      \
                _mm512_maskz_loadu_epi8(mask_for((n)-16 * j_), (p) + 16 * j_), bs);                \
            __m512i h_ = _mm512_loadu_si512((hp) + j_);                                            \
            MUL_ACC(d_, h_);                                                                       \
        }                                                                                          \
    } while (0)

/* GHASH(H, ad, data) with the lengths block, byte-reversed: ad's blocks, data's blocks and the
 * lengths block form one sequence b_0 .. b_(n-1), and the result is the sum of b_g * H^(n-g),
 * reduced once when n <= PMAX (no block waits for the reduction of the ones before it). */
TARGET static __m128i ghash_all(vaes_key *k, const uint8_t *ad, size_t adlen, const uint8_t *data,
                                size_t len)
{
    __m128i lens = _mm_set_epi64x((long long)((uint64_t)adlen * 8), (long long)((uint64_t)len * 8));
    size_t na = (adlen + 15) / 16, nd = (len + 15) / 16, n = na + nd + 1;
    const __m128i *hp = powers(k, n); /* b_g times hp[g] = H^(n-g) */
    if (hp == NULL) {                 /* long input: sixteen blocks per reduction */
        __m128i y = _mm_setzero_si128();
        if (adlen)
            y = ghash(k, y, ad, adlen);
        if (len)
            y = ghash(k, y, data, len);
        return gf_mul(_mm_xor_si128(y, lens), k->pw[15]);
    }
    const __m512i bs = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)bswap_bytes));
    __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
    if (adlen)
        REGION(ad, adlen, hp);
    if (len)
        REGION(data, len, hp + na);
    /* the lengths block times H^1, in lane 0 */
    __m512i dl = _mm512_zextsi128_si512(lens), hl = _mm512_zextsi128_si512(k->pw[15]);
    MUL_ACC(dl, hl);
    return gf_fold_reduce(lo, mid, hi);
}

/* E(K, nonce || be32(1)), the mask of the tag. Independent of the data: callers start it first
 * so its rounds overlap the work that follows. */
TARGET static inline __m128i tag_mask(const vaes_key *k, const uint8_t nonce[PURE_NONCE_LEN])
{
    uint8_t b[16];
    memcpy(b, nonce, 12);
    b[12] = 0, b[13] = 0, b[14] = 0, b[15] = 1;
    __m128i j0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)b), k->rk[0]);
    for (int r = 1; r < 10; r++)
        j0 = _mm_aesenc_si128(j0, k->rk[r]);
    return _mm_aesenclast_si128(j0, k->rk[10]);
}

/* The tag in normal byte order. The mask is read from *mask after GHASH: the caller keeps it in
 * one place it wipes, rather than the compiler in a spill slot of its own across the call. */
TARGET static inline __m128i tag_of(vaes_key *k, const __m128i *mask, const uint8_t *ad,
                                    size_t adlen, const uint8_t *data, size_t len)
{
    __m128i y = ghash_all(k, ad, adlen, data, len);
    return _mm_xor_si128(_mm_load_si128(mask),
                         _mm_shuffle_epi8(y, _mm_loadu_si128((const __m128i *)bswap_bytes)));
}

/* Makes the compiler treat the memory at p as seen by others from here on: a value it holds is
 * then read back from there after a call, not kept in a register spilled to a slot of its own. */
static inline void publish(const void *p)
{
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

#define EXPAND(prev, rcon)                                                                         \
    ({                                                                                             \
        __m128i g_ = _mm_shuffle_epi32(_mm_aeskeygenassist_si128(prev, rcon), 0xff);               \
        __m128i k_ = prev;                                                                         \
        k_ = _mm_xor_si128(k_, _mm_slli_si128(k_, 4));                                             \
        k_ = _mm_xor_si128(k_, _mm_slli_si128(k_, 4));                                             \
        k_ = _mm_xor_si128(k_, _mm_slli_si128(k_, 4));                                             \
        _mm_xor_si128(k_, g_);                                                                     \
    })

TARGET static void schedule(vaes_key *k, const uint8_t key[16])
{
    __m128i r[11];
    r[0] = _mm_loadu_si128((const __m128i *)key);
    r[1] = EXPAND(r[0], 0x01);
    r[2] = EXPAND(r[1], 0x02);
    r[3] = EXPAND(r[2], 0x04);
    r[4] = EXPAND(r[3], 0x08);
    r[5] = EXPAND(r[4], 0x10);
    r[6] = EXPAND(r[5], 0x20);
    r[7] = EXPAND(r[6], 0x40);
    r[8] = EXPAND(r[7], 0x80);
    r[9] = EXPAND(r[8], 0x1b);
    r[10] = EXPAND(r[9], 0x36);
    for (int i = 0; i < 11; i++)
        k->rk[i] = r[i];
    __m128i h = _mm_xor_si128(_mm_setzero_si128(), r[0]);
    for (int i = 1; i < 10; i++)
        h = _mm_aesenc_si128(h, r[i]);
    h = _mm_aesenclast_si128(h, r[10]);
    h = _mm_shuffle_epi8(h, _mm_loadu_si128((const __m128i *)bswap_bytes));
    __m128i p = h;
    k->pw[15] = h;
    for (int e = 2; e <= 16; e++) {
        p = gf_mul(p, h);
        k->pw[16 - e] = p;
    }
    for (int i = 16; i < 20; i++)
        k->pw[i] = _mm_setzero_si128();
    k->big = NULL;
    k->npow = 0;
    pure_wipe(r, sizeof r);
    pure_wipe(&h, sizeof h);
    pure_wipe(&p, sizeof p);
}

int pure_vaes_aead_init(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key)
{
    if (a == NULL || key == NULL)
        return PURE_EINVAL;
    a->impl = NULL;
    a->ops = &pure_aead_vaes;
    if (alg != PURE_AEAD_AES128_GCM || !pure_vaes_available())
        return PURE_EINVAL;
    vaes_key *k = aligned_alloc(64, sizeof *k);
    if (k == NULL)
        return PURE_ENOMEM;
    schedule(k, key);
    a->impl = k;
    a->alg = (uint8_t)alg;
    return 0;
}

void pure_vaes_aead_free(pure_aead *a)
{
    if (a == NULL || a->impl == NULL)
        return;
    vaes_key *k = a->impl;
    if (k->big) {
        pure_wipe(k->big, (PMAX + 4) * sizeof(__m128i));
        free(k->big);
    }
    pure_wipe(k, sizeof *k);
    free(k);
    a->impl = NULL;
}

TARGET int pure_vaes_aead_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                               size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN])
{
    if (a == NULL || a->impl == NULL || nonce == NULL || tag == NULL || (data == NULL && len) ||
        (ad == NULL && adlen))
        return PURE_EINVAL;
    vaes_key *k = a->impl;
    __m128i mask = tag_mask(k, nonce);
    publish(&mask);
    if (len)
        ctr(k, nonce, data, len, NULL, 0);
    _mm_storeu_si128((__m128i *)tag, tag_of(k, &mask, ad, adlen, data, len));
    wipe_vec(&mask, sizeof mask); /* E(K, J0): kept across the GHASH call, so on the stack */
    return 0;
}

TARGET int pure_vaes_aead_seal_from(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN],
                                    const uint8_t *ad, size_t adlen, uint8_t *data, size_t len,
                                    const pure_aead_src *runs, size_t nruns,
                                    uint8_t tag[PURE_TAG_LEN])
{
    if (a == NULL || a->impl == NULL || nonce == NULL || tag == NULL || (data == NULL && len) ||
        (ad == NULL && adlen) || (runs == NULL && nruns) || !pure_aead_runs_valid(len, runs, nruns))
        return PURE_EINVAL;
    vaes_key *k = a->impl;
    __m128i mask = tag_mask(k, nonce);
    publish(&mask);
    if (len)
        ctr(k, nonce, data, len, runs, nruns);
    _mm_storeu_si128((__m128i *)tag, tag_of(k, &mask, ad, adlen, data, len));
    wipe_vec(&mask, sizeof mask);
    return 0;
}

TARGET int pure_vaes_aead_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                               size_t adlen, uint8_t *data, size_t len,
                               const uint8_t tag[PURE_TAG_LEN])
{
    if (a == NULL || a->impl == NULL || nonce == NULL || tag == NULL || (data == NULL && len) ||
        (ad == NULL && adlen))
        return PURE_EINVAL;
    vaes_key *k = a->impl;
    __m128i mask = tag_mask(k, nonce);
    publish(&mask);
    __m128i d = _mm_xor_si128(tag_of(k, &mask, ad, adlen, data, len),
                              _mm_loadu_si128((const __m128i *)tag));
    wipe_vec(&mask, sizeof mask); /* E(K, J0): kept across the GHASH call, so on the stack */
    if (!_mm_testz_si128(d, d)) {
        /* checked before decrypting, so only ciphertext is here; zeroed all the same, as every
         * backend does (the seam's rule, crypto.h) */
        pure_wipe(data, len);
        return PURE_ECRYPTO;
    }
    if (len)
        ctr(k, nonce, data, len, NULL, 0);
    return 0;
}

#else /* not x86-64 with GCC-style intrinsics: never available */

int pure_vaes_available(void)
{
    return 0;
}
int pure_vaes_aead_init(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key)
{
    (void)alg, (void)key;
    if (a) {
        a->impl = NULL;
        a->ops = &pure_aead_vaes;
    }
    return PURE_EINVAL;
}
void pure_vaes_aead_free(pure_aead *a)
{
    (void)a;
}
int pure_vaes_aead_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                        size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN])
{
    (void)a, (void)nonce, (void)ad, (void)adlen, (void)data, (void)len, (void)tag;
    return PURE_EINVAL;
}
int pure_vaes_aead_seal_from(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                             size_t adlen, uint8_t *data, size_t len, const pure_aead_src *runs,
                             size_t nruns, uint8_t tag[PURE_TAG_LEN])
{
    (void)a, (void)nonce, (void)ad, (void)adlen, (void)data, (void)len, (void)runs, (void)nruns;
    (void)tag;
    return PURE_EINVAL;
}
int pure_vaes_aead_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                        size_t adlen, uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN])
{
    (void)a, (void)nonce, (void)ad, (void)adlen, (void)data, (void)len, (void)tag;
    return PURE_EINVAL;
}

#endif

const pure_aead_impl pure_aead_vaes = {
    .name = "vaes",
    .init = pure_vaes_aead_init,
    .free = pure_vaes_aead_free,
    .seal = pure_vaes_aead_seal,
    .open = pure_vaes_aead_open,
    .seal_from = pure_vaes_aead_seal_from,
};

/* SPDX-License-Identifier: MIT */
/* fuzz_common.c: helpers the whole-context fuzz targets share (see fuzz_common.h). */
#include "fuzz_common.h"

#include <string.h>

#include "crypto.h"
#include "keys.h"
#include "wire.h"

/* Each block carries its size in a 16-byte prefix (keeping the alignment malloc gives). */
void *fz_alloc(void *heap, size_t n)
{
    uint8_t *p = malloc(n + 16);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof n);
    ((fz_heap *)heap)->live++;
    return p + 16;
}

void fz_free(void *heap, void *q, size_t n)
{
    uint8_t *p = (uint8_t *)q - 16;
    size_t had;
    memcpy(&had, p, sizeof had);
    if (had != n)
        FZ_FAIL("free size differs from the allocated size");
    if (((fz_heap *)heap)->live == 0)
        FZ_FAIL("free on a heap that holds no blocks");
    ((fz_heap *)heap)->live--;
    free(p);
}

/* A fixed wall clock: INIT timestamps (and so every INIT's bytes) repeat from run to run. */
static uint64_t fz_realtime(void *user)
{
    (void)user;
    return 1800000000ull * 1000000000ull;
}

void fz_settings(pure_settings *s, uint8_t key_byte, uint64_t *rng, fz_heap *heap)
{
    pure_settings_default(s);
    memset(s->private_key, key_byte, sizeof s->private_key);
    s->private_key[31] = 0x40;
    s->crypto = &pure_crypto_null;
    s->random = fz_random;
    s->random_user = rng;
    s->alloc = fz_alloc;
    s->free = fz_free;
    s->alloc_user = heap;
    s->realtime = fz_realtime;
}

int fz_random(void *state, uint8_t *buf, size_t len)
{
    uint64_t *s = state;
    while (len > 0) {
        uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        for (int i = 0; i < 8 && len > 0; i++, len--)
            *buf++ = (uint8_t)(z >> (8 * i));
    }
    return 0;
}

void fz_addr(pure_addr *a, uint8_t host, uint16_t port)
{
    memset(a, 0, sizeof *a);
    a->len = 6;
    a->bytes[0] = 10;
    a->bytes[3] = host;
    a->bytes[4] = (uint8_t)(port >> 8);
    a->bytes[5] = (uint8_t)port;
}

size_t fz_seal(pure_link *link, uint8_t *pkt, size_t len, uint64_t pn, int flip_phase)
{
    uint8_t *payload = pkt + PURE_DATA_HEADER;
    pkt[0] = (uint8_t)(PURE_PKT_DATA0 | (link->key_phase ^ (flip_phase & 1)));
    uint32_t idx = link->remote_index;
    for (int i = 0; i < 4; i++)
        pkt[1 + i] = (uint8_t)(idx >> (8 * i));
    for (int i = 0; i < 7; i++)
        pkt[5 + i] = (uint8_t)(pn >> (8 * (6 - i)));
    uint8_t nonce[PURE_NONCE_LEN];
    pure_keys_nonce(nonce, link->tx.iv, pn);
    pure_aead *aead = pure_keys_aead(link->ctx, &link->tx);
    if (!aead || pure_crypto_null.aead_seal(aead, nonce, pkt, PURE_DATA_HEADER, payload, len,
                                            payload + len) != 0)
        FZ_FAIL("sealing a packet with the link's keys");
    return PURE_DATA_HEADER + len + PURE_TAG_LEN;
}

int fz_read(pure_ctx *ctx, const pure_addr *from, uint8_t *d, size_t n, uint64_t now)
{
    pure_ctx_stats before, after;
    pure_ctx_stats_get(ctx, &before);
    /* An arrival time before the read, as pure_loop gives from the kernel's receive timestamp:
     * 0 to 51 ms earlier, from the datagram's last byte (its tag: every value occurs), and now
     * itself for a fifth of them (pure_ctx_read's path). Time before 0 is not a time. */
    uint64_t back = n ? (uint64_t)d[n - 1] * 200000u : 0;
    int rc = n && d[n - 1] % 5 == 0
                 ? pure_ctx_read(ctx, from, d, n, now)
                 : pure_ctx_read_at(ctx, from, d, n, 0, now > back ? now - back : 0, now);
    pure_ctx_stats_get(ctx, &after);
    if (after.datagrams_in != before.datagrams_in + 1)
        FZ_FAIL("datagram not counted");
    switch (rc) {
    case 0: break;
    case PURE_EPROTO:
        if (after.dropped_malformed <= before.dropped_malformed)
            FZ_FAIL("malformed datagram dropped without being counted");
        break;
    case PURE_ECRYPTO:
        if (after.dropped_auth <= before.dropped_auth)
            FZ_FAIL("unauthenticated datagram dropped without being counted");
        break;
    case PURE_EINVAL:
        if (after.dropped_unknown_link <= before.dropped_unknown_link &&
            after.dropped_replay <= before.dropped_replay)
            FZ_FAIL("stale datagram dropped without being counted");
        break;
    case PURE_ECLOSED: /* the datagram ended its link (on_closed has the reason) */
    case PURE_ENOMEM: /* dropped: no memory for the link's buffers */ break;
    default: FZ_FAIL("pure_ctx_read returned an undocumented code");
    }
    return rc;
}

int fz_flush(pure_ctx *from, const pure_addr *from_addr, pure_ctx *to, uint64_t now, fz_tap *tap,
             void *arg)
{
    static uint8_t buf[65536];
    size_t seg;
    pure_addr dst;
    int count = 0;
    for (int guard = 0; guard < 256; guard++) {
        int64_t n = pure_ctx_write(from, buf, sizeof buf, &seg, &dst, now);
        if (n < 0)
            FZ_FAIL("pure_ctx_write failed with a large enough buffer");
        if (n == 0)
            break;
        if (seg == 0 || seg > PURE_MAX_UDP_PAYLOAD || (size_t)n > sizeof buf)
            FZ_FAIL("pure_ctx_write burst shape");
        for (int64_t off = 0; off < n; off += (int64_t)seg) {
            size_t len = (size_t)(n - off) < seg ? (size_t)(n - off) : seg;
            if (tap)
                tap(arg, &dst, buf + off, len);
            if (to)
                fz_read(to, from_addr, buf + off, len, now);
            count++;
        }
    }
    return count;
}

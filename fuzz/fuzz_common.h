/* fuzz_common.h: what the whole-context fuzz targets (packet_fuzz, recv_fuzz, link_fuzz) share:
 * a counting, size-checking allocator, a seeded PRNG for pure_settings.random, test addresses,
 * sealing a DATA packet with a link's real transmit keys, and a pure_ctx_read that checks the
 * result against the function's contract. All of it runs on the null crypto backend. */
#ifndef PURE_FUZZ_COMMON_H
#define PURE_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pure.h"

#define FZ_MS 1000000ull

/* Prints which check broke and aborts, so libFuzzer reports the input as a crash. */
#define FZ_FAIL(what)                                                                              \
    do {                                                                                           \
        fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, __FILE__, __LINE__);              \
        abort();                                                                                   \
    } while (0)

/* Injected allocator: alloc_user points at an fz_heap, which counts the blocks it holds; every
 * free must pass the size that was allocated. */
typedef struct fz_heap {
    size_t live;
} fz_heap;
void *fz_alloc(void *heap, size_t n);
void fz_free(void *heap, void *p, size_t n);

/* splitmix64 over the uint64_t state at user: a deterministic pure_settings.random. */
int fz_random(void *state, uint8_t *buf, size_t len);

/* Defaults plus what every target wants: a private key of key_byte (clamped), the null crypto
 * backend, fz_random over *rng and the counting allocator over *heap. */
void fz_settings(pure_settings *s, uint8_t key_byte, uint64_t *rng, fz_heap *heap);

/* 10.0.0.host:port */
void fz_addr(pure_addr *a, uint8_t host, uint16_t port);

/* Writes the DATA header (link's peer index, key phase xor flip_phase, pn) before the len frame
 * bytes at pkt + PURE_DATA_HEADER and seals them with the link's transmit keys, as the link
 * itself would. Returns the datagram's length. */
size_t fz_seal(pure_link *link, uint8_t *pkt, size_t len, uint64_t pn, int flip_phase);

/* Writes every burst `from` has queued at now and passes each datagram to tap (when not NULL)
 * and then to `to` (fz_read, when not NULL: from_addr is the source). Checks the burst's shape.
 * Returns the number of datagrams (at most 256 bursts per call, so a runaway sender ends). */
typedef void fz_tap(void *arg, const pure_addr *dst, uint8_t *d, size_t n);
int fz_flush(pure_ctx *from, const pure_addr *from_addr, pure_ctx *to, uint64_t now, fz_tap *tap,
             void *arg);

/* pure_ctx_read, checking that the datagram was counted, that the code is one pure.h documents,
 * and that every drop went into the matching counter. Returns the code. */
int fz_read(pure_ctx *ctx, const pure_addr *from, uint8_t *d, size_t n, uint64_t now);

#endif

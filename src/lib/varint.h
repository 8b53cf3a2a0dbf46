/* SPDX-License-Identifier: MIT */
/* varint.h: QUIC-style variable-length integers (RFC 9000 section 16): 1, 2, 4 or 8 bytes, the top
 * two bits of the first byte giving the length; values up to 2^62-1. */
#ifndef PURE_VARINT_H
#define PURE_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define PURE_VARINT_MAX ((1ull << 62) - 1)

/* Bytes needed to encode v (v <= PURE_VARINT_MAX). */
static inline size_t pure_varint_len(uint64_t v)
{
    return v < 64 ? 1 : v < 16384 ? 2 : v < 1073741824 ? 4 : 8;
}

/* Writes v at p (room for pure_varint_len(v) bytes is the caller's duty); returns the end. */
static inline uint8_t *pure_varint_put(uint8_t *p, uint64_t v)
{
    if (v < 64) {
        *p++ = (uint8_t)v;
    } else if (v < 16384) {
        *p++ = (uint8_t)(0x40 | (v >> 8));
        *p++ = (uint8_t)v;
    } else if (v < 1073741824) {
        *p++ = (uint8_t)(0x80 | (v >> 24));
        *p++ = (uint8_t)(v >> 16);
        *p++ = (uint8_t)(v >> 8);
        *p++ = (uint8_t)v;
    } else {
        *p++ = (uint8_t)(0xc0 | (v >> 56));
        for (int s = 48; s >= 0; s -= 8)
            *p++ = (uint8_t)(v >> s);
    }
    return p;
}

/* Reads a varint from [*p, end). Returns 0 and advances *p, or -1 if the input is truncated. */
static inline int pure_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *q = *p;
    if (q >= end)
        return -1;
    size_t n = (size_t)1 << (q[0] >> 6);
    if ((size_t)(end - q) < n)
        return -1;
    uint64_t x = q[0] & 0x3f;
    for (size_t i = 1; i < n; i++)
        x = (x << 8) | q[i];
    *v = x;
    *p = q + n;
    return 0;
}

static inline void pure_put_u32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t pure_get_u32be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Little-endian u32 (link indices in packet headers) and big-endian u64 (the INIT timestamp). */
static inline void pure_put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t pure_get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void pure_put_u64be(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline uint64_t pure_get_u64be(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

#endif

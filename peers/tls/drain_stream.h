/* The drain benchmark's byte stream, shared by the tls and udp-floor peers.
 *
 * Stream: the 4-byte preamble "pure", then N messages, each a u32 big-endian
 * length followed by SIZE body bytes where body byte i is i % 251. After the
 * preamble the stream repeats every 4 + SIZE bytes, so a sender never builds
 * messages: it hands out pointers into a pattern that never changes
 * (stream_at). The receiver parses the framing (stream_sink): it checks the
 * preamble and every length, and counts messages and body bytes.
 */
#ifndef PEER_DRAIN_STREAM_H
#define PEER_DRAIN_STREAM_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_PREAMBLE "pure"
#define DRAIN_MAX_SIZE (64u << 20) /* largest body a receiver accepts */

static inline void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}
static inline uint32_t get_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void put_be64(unsigned char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}
static inline uint64_t get_be64(const unsigned char *p)
{
    return ((uint64_t)get_be32(p) << 32) | get_be32(p + 4);
}

/* ---- sender side ---- */
struct stream_src {
    uint64_t period;     /* 4 + size */
    uint64_t total;      /* 4 + n * period: every byte the client writes */
    size_t chunk;        /* stream_at() guarantees this many contiguous bytes */
    unsigned char *head; /* stream bytes [0, 4 + chunk) */
    unsigned char *pat;  /* pat[j] = message byte j % period, j < period + chunk */
};

static int stream_src_init(struct stream_src *s, uint64_t n, uint32_t size, size_t chunk)
{
    memset(s, 0, sizeof *s);
    s->period = 4 + (uint64_t)size;
    s->total = 4 + n * s->period;
    s->chunk = chunk;
    s->pat = malloc(s->period + chunk);
    s->head = malloc(4 + chunk);
    if (!s->pat || !s->head) {
        free(s->pat);
        free(s->head);
        return -1;
    }
    for (uint64_t j = 0; j < s->period + chunk; j++) {
        uint64_t k = j % s->period;
        unsigned char b;
        if (k < 4)
            b = (unsigned char)(size >> (8 * (3 - k)));
        else
            b = (unsigned char)((k - 4) % 251);
        s->pat[j] = b;
    }
    memcpy(s->head, DRAIN_PREAMBLE, 4);
    memcpy(s->head + 4, s->pat, chunk);
    return 0;
}

static void stream_src_free(struct stream_src *s)
{
    free(s->pat);
    free(s->head);
    s->pat = s->head = NULL;
}

/* Pointer to stream byte `off`; min(chunk, total - off) bytes from it are valid. */
static inline const unsigned char *stream_at(const struct stream_src *s, uint64_t off)
{
    if (off < 4)
        return s->head + off;
    return s->pat + (off - 4) % s->period;
}

/* ---- receiver side ---- */
struct stream_sink {
    uint32_t pre;      /* preamble bytes seen (0..4) */
    uint32_t hdr_have; /* length-prefix bytes seen (0..3) */
    unsigned char hdr[4];
    int have_size; /* first length seen: every later one must equal it */
    uint32_t size;
    uint64_t body_left; /* bytes left in the current body */
    uint64_t messages;  /* complete messages */
    uint64_t body_bytes;
    uint64_t total; /* every byte fed */
    int failed;
    char err[200];
};

static void stream_sink_init(struct stream_sink *k)
{
    memset(k, 0, sizeof *k);
}

static int sink_fail(struct stream_sink *k, const char *msg, uint64_t v)
{
    k->failed = 1;
    snprintf(k->err, sizeof k->err,
             "%s (value %" PRIu64 ", at stream byte %" PRIu64 ", after %" PRIu64 " messages)", msg,
             v, k->total, k->messages);
    return -1;
}

static int sink_length(struct stream_sink *k, uint32_t len)
{
    if (len > DRAIN_MAX_SIZE)
        return sink_fail(k, "message length exceeds the 64 MiB limit", len);
    if (!k->have_size) {
        k->have_size = 1;
        k->size = len;
    } else if (len != k->size) {
        return sink_fail(
            k, "message length differs from the first message's (drain messages all have one size)",
            len);
    }
    if (len == 0)
        k->messages++;
    else
        k->body_left = len;
    return 0;
}

/* Feeds received bytes; returns 0, or -1 with k->err set (and stays failed). */
static int stream_sink_feed(struct stream_sink *k, const unsigned char *p, size_t len)
{
    if (k->failed)
        return -1;
    while (len) {
        if (k->body_left) {
            uint64_t t = k->body_left < len ? k->body_left : len;
            k->body_left -= t;
            k->body_bytes += t;
            k->total += t;
            p += t;
            len -= (size_t)t;
            if (!k->body_left)
                k->messages++;
        } else if (k->pre < 4) {
            if (*p != (unsigned char)DRAIN_PREAMBLE[k->pre])
                return sink_fail(k, "bad preamble byte (expected \"pure\")", *p);
            k->pre++;
            k->total++;
            p++;
            len--;
        } else if (k->hdr_have == 0 && len >= 4) {
            uint32_t l = get_be32(p);
            p += 4;
            len -= 4;
            if (sink_length(k, l))
                return -1;
            k->total += 4;
        } else {
            k->hdr[k->hdr_have++] = *p++;
            len--;
            if (k->hdr_have == 4) {
                k->hdr_have = 0;
                if (sink_length(k, get_be32(k->hdr)))
                    return -1;
            }
            k->total++;
        }
    }
    return 0;
}

/* At end of stream: 0 if the stream ended on a message boundary. */
static int stream_sink_finish(struct stream_sink *k)
{
    if (k->failed)
        return -1;
    if (k->pre < 4)
        return sink_fail(k, "stream ended inside the preamble", k->pre);
    if (k->hdr_have)
        return sink_fail(k, "stream ended inside a length prefix", k->hdr_have);
    if (k->body_left)
        return sink_fail(k, "stream ended inside a message body; bytes missing", k->body_left);
    return 0;
}

/* Strict decimal parse of a command-line number in [lo, hi]. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

#endif

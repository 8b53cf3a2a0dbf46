/* SPDX-License-Identifier: MIT */
/* rpc_work.h is the RPC workload's request format, reply check, latency histogram and report,
 * shared by every RPC client and server written in C (tools/rpc_bench.c for Pure,
 * peers/tls/rpc.c for TCP + TLS 1.3; the ngtcp2 peer later), so that every row does the same work
 * and is checked the same way (bench/README.md, "RPC").
 *
 * A request is SIZE bytes (SIZE >= RPC_HDR): a u64 big-endian sequence number (per link, from
 * 0), the u32 big-endian index of the client's link, then pattern bytes: body byte j (j >= 12)
 * is (j + seq + link) % 251. The server sends every request back unchanged on the same link;
 * the client regenerates what it expects from (link, seq) and compares every byte, so a reply
 * that is late, misrouted, reordered, cut or changed is caught without keeping any copy. The
 * stream transports frame each message as a u32 big-endian length and the body (no preamble);
 * Pure carries the body as one message.
 *
 * Nothing here allocates per request: the pattern is built once (rpc_pattern_new), and the
 * histogram is a fixed array of counters.
 */
#ifndef RPC_WORK_H
#define RPC_WORK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define RPC_HDR 12                /* seq (8) + link (4) */
#define RPC_MAX_SIZE (1u << 20)   /* largest request any RPC server takes */
#define RPC_MAX_OUTSTANDING 1024u /* P: requests in flight per link */

/* The fan-in drain (bench/README.md, "Fan-in"): a request whose sequence number has RPC_ONEWAY
 * set is counted by the server and not sent back, unless RPC_LAST is set too: a link's last
 * one-way request is echoed like any other, and since a link delivers in order, its echo says
 * every earlier request on the link arrived. */
#define RPC_ONEWAY (1ull << 63)
#define RPC_LAST (1ull << 62)

static inline void rpc_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline uint32_t rpc_get_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void rpc_put_be64(uint8_t *p, uint64_t v)
{
    rpc_put_be32(p, (uint32_t)(v >> 32));
    rpc_put_be32(p + 4, (uint32_t)v);
}
static inline uint64_t rpc_get_be64(const uint8_t *p)
{
    return ((uint64_t)rpc_get_be32(p) << 32) | rpc_get_be32(p + 4);
}

static inline uint64_t rpc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* user + sys CPU of this process, seconds. */
static inline double rpc_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* ---- requests ---- */

/* pat[j] = j % 251 for j < 251 + size: request bytes from RPC_HDR on are a slice of it. */
static inline uint8_t *rpc_pattern_new(uint32_t size)
{
    uint8_t *pat = (uint8_t *)malloc(251 + (size_t)size); /* cast: C++ peers include this too */
    if (pat)
        for (size_t j = 0; j < 251 + (size_t)size; j++)
            pat[j] = (uint8_t)(j % 251);
    return pat;
}

/* 1 if the server sends request d[0..n) back: anything but a one-way request that is not its
 * link's last. */
static inline int rpc_server_echoes(const uint8_t *d, size_t n)
{
    return n < 8 || (d[0] & 0xc0) != 0x80;
}

/* Writes request (link, seq) of `size` bytes into out. */
static inline void rpc_request(uint8_t *out, const uint8_t *pat, uint32_t size, uint32_t link,
                               uint64_t seq)
{
    rpc_put_be64(out, seq);
    rpc_put_be32(out + 8, link);
    size_t off = (size_t)((seq + link) % 251);
    memcpy(out + RPC_HDR, pat + off + RPC_HDR, size - RPC_HDR);
}

/* 0 if d[0..len) is exactly request (link, seq) of `size` bytes; else a short reason. */
static inline const char *rpc_check(const uint8_t *d, size_t len, const uint8_t *pat, uint32_t size,
                                    uint32_t link, uint64_t seq)
{
    if (len != size)
        return "wrong length";
    if (rpc_get_be64(d) != seq)
        return "wrong sequence number (a reply missing, repeated or out of order)";
    if (rpc_get_be32(d + 8) != link)
        return "another link's reply";
    size_t off = (size_t)((seq + link) % 251);
    if (memcmp(d + RPC_HDR, pat + off + RPC_HDR, size - RPC_HDR))
        return "body differs from the request";
    return NULL;
}

/* ---- latency histogram ----
 * HDR-style log-linear buckets over nanoseconds: values below 2^SUB exact, above that 2^SUB
 * buckets per power of two, so a bucket is at most 1/64 (1.6%) of its value wide. A fixed
 * array: recording is a shift and an increment. */
#define RPC_HIST_SUB 6
#define RPC_HIST_BUCKETS ((64 - RPC_HIST_SUB + 1) << RPC_HIST_SUB)

typedef struct rpc_hist {
    uint64_t n, sum_ns, max_ns;
    uint64_t count[RPC_HIST_BUCKETS];
} rpc_hist;

static inline unsigned rpc_hist_index(uint64_t v)
{
    if (v < (1u << RPC_HIST_SUB))
        return (unsigned)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - RPC_HIST_SUB;
    return ((shift + 1) << RPC_HIST_SUB) + (unsigned)((v >> shift) - (1u << RPC_HIST_SUB));
}

/* The middle of bucket i, ns. */
static inline double rpc_hist_value(unsigned i)
{
    if (i < (1u << RPC_HIST_SUB))
        return i;
    unsigned shift = (i >> RPC_HIST_SUB) - 1;
    uint64_t mant = (i & ((1u << RPC_HIST_SUB) - 1)) + (1u << RPC_HIST_SUB);
    return ((double)(mant << shift) + (double)((mant + 1) << shift) - 1) / 2;
}

static inline void rpc_hist_add(rpc_hist *h, uint64_t ns)
{
    h->count[rpc_hist_index(ns)]++;
    h->n++;
    h->sum_ns += ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

/* The q-quantile (nearest rank) in µs; 0 for an empty histogram. */
static inline double rpc_hist_quantile_us(const rpc_hist *h, double q)
{
    if (!h->n)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999), seen = 0;
    if (rank < 1)
        rank = 1;
    for (unsigned i = 0; i < RPC_HIST_BUCKETS; i++) {
        seen += h->count[i];
        if (seen >= rank) {
            double v = rpc_hist_value(i);
            return (v > (double)h->max_ns ? (double)h->max_ns : v) / 1e3;
        }
    }
    return (double)h->max_ns / 1e3;
}

/* ---- the client's report ---- */

typedef struct rpc_result {
    uint64_t links, outstanding, size;
    double connect_s;       /* from the first connect until every link could send */
    double window_s;        /* the measured window */
    uint64_t requests;      /* replies received (and checked) inside the window */
    double client_cpu_s;    /* this process's CPU inside the window */
    uint64_t sent, replies; /* whole run, warm-up and drain included */
    uint64_t errors;        /* replies that failed rpc_check, and links lost */
    uint64_t missing;       /* requests never answered */
    const char *first_error;
    double rate;       /* --rate: requests per second over all links (0: as fast as replies come) */
    const char *extra; /* more JSON members (", \"key\": value ..."), or NULL */
} rpc_result;

/* Counts an error in r, keeps the first reason, and says the first five on stderr ("prog: why"). */
static inline void rpc_fail(rpc_result *r, const char *prog, const char *why)
{
    if (!r->first_error)
        r->first_error = why;
    if (r->errors++ < 5)
        fprintf(stderr, "%s: %s\n", prog, why);
}

/* Prints the phase line the runner samples the server's CPU at. */
static inline void rpc_phase(const char *phase)
{
    printf("{\"phase\": \"%s\", \"t_ns\": %" PRIu64 "}\n", phase, rpc_now_ns());
    fflush(stdout);
}

static inline void rpc_print_result(const rpc_result *r, const rpc_hist *h, const char *impl)
{
    double w = r->window_s > 0 ? r->window_s : 1e-9;
    double per = r->requests ? r->client_cpu_s * 1e6 / (double)r->requests : 0;
    printf(
        "{\"rpc\": \"%s\", \"links\": %" PRIu64 ", \"outstanding\": %" PRIu64 ", \"size\": %" PRIu64
        ", \"connect_seconds\": %.3f, \"seconds\": %.6f, \"requests\": %" PRIu64
        ", \"requests_per_s\": %.1f, \"client_cpu_s\": %.6f, \"client_cpu_us_per_request\": %.4f"
        ", \"mean_us\": %.2f, \"p50_us\": %.2f, \"p99_us\": %.2f, \"p999_us\": %.2f, \"max_us\": %.2f"
        ", \"sent\": %" PRIu64 ", \"replies\": %" PRIu64 ", \"errors\": %" PRIu64
        ", \"missing\": %" PRIu64 ", \"rate_per_s\": %.0f, \"first_error\": \"%s\"%s}\n",
        impl, r->links, r->outstanding, r->size, r->connect_s, r->window_s, r->requests,
        (double)r->requests / w, r->client_cpu_s, per,
        h->n ? (double)h->sum_ns / (double)h->n / 1e3 : 0.0, rpc_hist_quantile_us(h, 0.5),
        rpc_hist_quantile_us(h, 0.99), rpc_hist_quantile_us(h, 0.999), (double)h->max_ns / 1e3,
        r->sent, r->replies, r->errors, r->missing, r->rate, r->first_error ? r->first_error : "",
        r->extra ? r->extra : "");
    fflush(stdout);
}

/* The fan-in client's one line: r->requests is every one-way request sent (links x N), r->window_s
 * the time from the first send to the last link's final echo, r->replies the final echoes. */
static inline void rpc_print_fanin(const rpc_result *r, uint64_t per_link, const char *impl)
{
    double w = r->window_s > 0 ? r->window_s : 1e-9;
    printf("{\"fanin\": \"%s\", \"links\": %" PRIu64 ", \"messages_per_link\": %" PRIu64
           ", \"size\": %" PRIu64
           ", \"connect_seconds\": %.3f, \"seconds\": %.6f, \"messages\": %" PRIu64
           ", \"messages_per_s\": %.1f, \"client_cpu_s\": %.6f, \"client_cpu_us_per_message\": %.4f"
           ", \"sent\": %" PRIu64 ", \"replies\": %" PRIu64 ", \"errors\": %" PRIu64
           ", \"missing\": %" PRIu64 ", \"first_error\": \"%s\"%s}\n",
           impl, r->links, per_link, r->size, r->connect_s, r->window_s, r->requests,
           (double)r->requests / w, r->client_cpu_s,
           r->requests ? r->client_cpu_s * 1e6 / (double)r->requests : 0.0, r->sent, r->replies,
           r->errors, r->missing, r->first_error ? r->first_error : "", r->extra ? r->extra : "");
    fflush(stdout);
}

/* Parses a duration in seconds ("1", "0.5") into ns; -1 if it is not a number in [0, 86400]. */
static inline int rpc_parse_seconds(const char *s, uint64_t *ns)
{
    char *end;
    double v = s ? strtod(s, &end) : -1;
    if (!s || end == s || *end || !(v >= 0 && v <= 86400))
        return -1;
    *ns = (uint64_t)(v * 1e9);
    return 0;
}

/* Parses a decimal count in [lo, hi]; -1 on anything else. */
static inline int rpc_parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

#endif

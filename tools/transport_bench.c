/* SPDX-License-Identifier: MIT */
/* transport_bench: Pure's own cost per message without sockets or a second process: a
 * backlog of N messages drained through a link from one context to another in the same
 * process, datagrams handed over in memory (GSO-sized bursts, as the I/O loop would), real
 * crypto. Prints one JSON line with CPU per message. Used for profiling (callgrind) the core.
 *
 *   transport_bench N SIZE [--null-crypto]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "crypto.h"
#include "pure.h"

typedef struct bench {
    pure_ctx *cli, *srv;
    pure_link *link;
    uint64_t n, sent, received, bytes;
    size_t size;
    uint8_t *body;
    int finished, accepted, failed;
} bench;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void pump(bench *b)
{
    while (b->link && b->sent < b->n) {
        int64_t rc = pure_link_send(b->link, b->body, b->size);
        if (rc == PURE_EAGAIN)
            return;
        if (rc < 0) {
            fprintf(stderr, "transport_bench: send: %s\n", pure_strerror((int)rc));
            b->failed = 1;
            return;
        }
        b->sent++;
    }
    if (b->link && b->sent == b->n && b->n) {
        pure_link_finish(b->link);
        b->n = 0; /* finished once */
    }
}

static int on_accept(pure_link *l, const char *svc, const uint8_t *key, void *user)
{
    bench *b = user;
    b->accepted = 1;
    pure_link_set_user(l, b);
    return 0;
}
static void on_message(pure_link *l, void *user, const uint8_t *d, size_t len)
{
    bench *b = user;
    if (l != b->link) {
        b->received++;
        b->bytes += len;
    }
}
static void on_writable(pure_link *l, void *user)
{
    pump(user);
}
static void on_peer_finished(pure_link *l, void *user)
{
    ((bench *)user)->finished = 1;
}
static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    bench *b = user;
    if (info->error) {
        fprintf(stderr, "transport_bench: link closed: %s\n", pure_strerror(info->error));
        b->failed = 1;
    }
    if (l == b->link)
        b->link = NULL;
}

static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_message = on_message,
                                   .on_writable = on_writable,
                                   .on_peer_finished = on_peer_finished,
                                   .on_closed = on_closed};

/* Moves every burst `from` wants to send into `to`, split into datagrams. */
static int shuttle(pure_ctx *from, pure_ctx *to, const pure_addr *from_addr, uint8_t *buf,
                   uint64_t now)
{
    int moved = 0;
    size_t seg;
    pure_addr dst;
    int64_t n;
    while ((n = pure_ctx_write(from, buf, 65536, &seg, &dst, now)) > 0) {
        for (int64_t off = 0; off < n; off += (int64_t)seg) {
            size_t len = (size_t)(n - off) < seg ? (size_t)(n - off) : seg;
            pure_ctx_read(to, from_addr, buf + off, len, now);
        }
        moved = 1;
    }
    return moved;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: transport_bench N SIZE [--null-crypto]\n");
        return 2;
    }
    bench b = {0};
    uint64_t n = strtoull(argv[1], NULL, 10);
    b.size = strtoul(argv[2], NULL, 10);
    int null_crypto = argc > 3 && strcmp(argv[3], "--null-crypto") == 0;
    if (n == 0 || b.size > (16u << 20)) {
        fprintf(stderr, "transport_bench: N must be > 0 and SIZE <= 16 MiB\n");
        return 2;
    }
    b.n = n;
    b.body = malloc(b.size ? b.size : 1);
    for (size_t i = 0; i < b.size; i++)
        b.body[i] = (uint8_t)(i % 251);
    pure_settings s;
    pure_settings_default(&s);
    s.callbacks = &cbs;
    s.user = &b;
    s.allow_any = 1;
    if (null_crypto)
        s.crypto = &pure_crypto_null;
    pure_keygen(s.private_key);
    if (pure_ctx_new(&s, &b.cli))
        return 1;
    pure_keygen(s.private_key);
    if (pure_ctx_new(&s, &b.srv))
        return 1;
    pure_ctx_add_service(b.srv, "drain");
    pure_addr ca = {.len = 6, .bytes = {127, 0, 0, 1, 0, 1}};
    pure_addr sa = {.len = 6, .bytes = {127, 0, 0, 1, 0, 2}};
    uint8_t *buf = malloc(65536);
    uint64_t t0 = now_ns();
    double c0 = cpu_s();
    if (pure_connect(b.cli, &sa, pure_ctx_public_key(b.srv), "drain", &b, &b.link, t0))
        return 1;
    pump(&b);
    while (!b.finished && !b.failed) {
        uint64_t now = now_ns();
        int moved = shuttle(b.cli, b.srv, &ca, buf, now);
        moved |= shuttle(b.srv, b.cli, &sa, buf, now);
        if (!moved) {
            uint64_t d1 = pure_ctx_deadline(b.cli), d2 = pure_ctx_deadline(b.srv);
            uint64_t d = d1 < d2 ? d1 : d2;
            if (d == UINT64_MAX) {
                fprintf(stderr, "transport_bench: stalled with nothing to do\n");
                b.failed = 1;
                break;
            }
            now = now_ns();
            if (d > now) {
                struct timespec ts = {0, (long)(d - now)};
                nanosleep(&ts, NULL);
            }
            now = now_ns();
            pure_ctx_timeout(b.cli, now);
            pure_ctx_timeout(b.srv, now);
        }
    }
    double cpu = cpu_s() - c0;
    double secs = (double)(now_ns() - t0) / 1e9;
    printf("{\"messages\": %llu, \"size\": %zu, \"bytes\": %llu, \"seconds\": %.3f, "
           "\"cpu_us_per_message\": %.4f, \"crypto\": \"%s\"}\n",
           (unsigned long long)b.received, b.size, (unsigned long long)b.bytes, secs,
           cpu * 1e6 / (double)n, null_crypto ? "null" : "default");
    int ok = !b.failed && b.received == n;
    pure_ctx_free(b.cli);
    pure_ctx_free(b.srv);
    free(buf);
    free(b.body);
    return ok ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/* poll_sansio.c: Pure's sans-I/O core in an application's own poll() loop, without pure_loop.
 * The application owns the socket and the clock; Pure only turns datagrams and times into
 * messages, callbacks and datagrams to send.
 *
 *   poll_sansio 127.0.0.1:PORT SERVER_PUBLIC_KEY [N]     (an echo service; N default 100)
 *
 * Sends N messages, waits for their echoes, closes; exits 0 if all came back. */
#include <arpa/inet.h>
#include <poll.h>
#include <pure.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static uint64_t now_ns(void) /* any monotonic clock in ns will do */
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t echoed, n = 100;
static int closed;

static void on_message(pure_link *link, void *user, const uint8_t *d, size_t len)
{
    if (++echoed == n)
        pure_link_close(link, 0, "done");
}
static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    closed = 1;
}

int main(int argc, char **argv)
{
    /* The core treats an address as opaque bytes: here, a struct sockaddr_in. */
    pure_addr to = {.len = sizeof(struct sockaddr_in)};
    struct sockaddr_in sin = {.sin_family = AF_INET};
    char host[64];
    unsigned port;
    uint8_t key[PURE_KEY_LEN];
    if (argc < 3 || sscanf(argv[1], "%63[0-9.]:%u", host, &port) != 2 ||
        inet_pton(AF_INET, host, &sin.sin_addr) != 1 || pure_key_from_base64(key, argv[2]) != 0) {
        fprintf(stderr, "usage: poll_sansio 127.0.0.1:PORT SERVER_PUBLIC_KEY [N]\n");
        return 2;
    }
    if (argc > 3)
        n = strtoull(argv[3], NULL, 10);
    sin.sin_port = htons((uint16_t)port);
    memcpy(to.bytes, &sin, sizeof sin);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return 1;

    static const pure_callbacks cb = {.on_message = on_message, .on_closed = on_closed};
    pure_settings s;
    pure_settings_default(&s);
    pure_keygen(s.private_key);
    s.callbacks = &cb;
    pure_ctx *ctx;
    pure_link *link;
    uint64_t start = now_ns();
    if (pure_ctx_new(&s, &ctx) != 0 || pure_connect(ctx, &to, key, "echo", NULL, &link, start) != 0)
        return 1;
    for (uint64_t i = 0; i < n; i++) /* small messages: all fit in the send queue at once */
        if (pure_link_send(link, "ping", 4) < 0)
            return 1;

    static uint8_t buf[65536];
    while (!closed && now_ns() - start < 30ull * 1000000000) {
        /* 1. send everything the core has: bursts of `seg`-byte datagrams to one address */
        size_t seg;
        pure_addr dst;
        int64_t len;
        while ((len = pure_ctx_write(ctx, buf, sizeof buf, &seg, &dst, now_ns())) > 0)
            for (int64_t off = 0; off < len; off += (int64_t)seg)
                sendto(fd, buf + off, (size_t)(len - off) < seg ? (size_t)(len - off) : seg, 0,
                       (struct sockaddr *)dst.bytes, dst.len);
        /* 2. sleep until a datagram comes or the core's next deadline */
        uint64_t deadline = pure_ctx_deadline(ctx), now = now_ns();
        int wait_ms = deadline == UINT64_MAX ? 1000
                      : deadline <= now      ? 0
                                             : (int)((deadline - now + 999999) / 1000000);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        poll(&pfd, 1, wait_ms > 1000 ? 1000 : wait_ms);
        /* 3. feed every datagram received, then run the timers that are due */
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t r;
        while ((r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl)) >= 0) {
            pure_addr a = {.len = fl};
            memcpy(a.bytes, &from, fl < sizeof a.bytes ? fl : sizeof a.bytes);
            pure_ctx_read(ctx, &a, buf, (size_t)r, now_ns()); /* junk is dropped: ignore rc */
            fl = sizeof from;
        }
        if (pure_ctx_deadline(ctx) <= now_ns())
            pure_ctx_timeout(ctx, now_ns());
    }
    pure_ctx_free(ctx);
    printf("poll_sansio: %llu of %llu echoed\n", (unsigned long long)echoed, (unsigned long long)n);
    return echoed == n ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/* echo_client.c: a Pure client with pure_loop: sends N messages to an echo service, checks
 * that each comes back, then closes the link.
 *
 *   echo_client HOST:PORT SERVER_PUBLIC_KEY [N]       (N default 1000)
 *
 * Exits 0 if every echo came back intact and in order. */
#include <pure.h>
#include <pure_loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct client {
    pure_loop *loop;
    uint64_t n, sent, echoed;
    int ok, done;
} client;

/* Sends until all N are accepted or the send queue is full (then on_writable calls again). */
static void send_more(pure_link *link, client *c)
{
    char msg[64];
    while (c->sent < c->n) {
        int len = snprintf(msg, sizeof msg, "message %llu", (unsigned long long)c->sent);
        if (pure_link_send(link, msg, (size_t)len) < 0)
            return; /* PURE_EAGAIN: wait for on_writable */
        c->sent++;
    }
}

static void on_writable(pure_link *link, void *user)
{
    send_more(link, user);
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    client *c = user;
    char want[64];
    int n = snprintf(want, sizeof want, "message %llu", (unsigned long long)c->echoed);
    if ((size_t)n != len || memcmp(want, data, len) != 0)
        c->ok = 0; /* Pure delivers in order, exactly once: this would be a bug */
    if (++c->echoed == c->n)
        pure_link_close(link, 0, "done"); /* graceful: on_closed follows */
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    client *c = user;
    if (info->error)
        fprintf(stderr, "echo_client: link closed: %s\n", pure_strerror(info->error));
    c->done = 1;
    if (c->loop) /* NULL once freed: pure_ctx_free may run this too */
        pure_loop_stop(c->loop);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: echo_client HOST:PORT SERVER_PUBLIC_KEY [N]\n");
        return 2;
    }
    client c = {.n = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000, .ok = 1};
    pure_addr to;
    uint8_t server_key[PURE_KEY_LEN];
    if (pure_addr_from_string(&to, argv[1]) != 0 ||
        pure_key_from_base64(server_key, argv[2]) != 0) {
        fprintf(stderr, "echo_client: bad address or key\n");
        return 2;
    }
    static const pure_callbacks cb = {
        .on_message = on_message, .on_writable = on_writable, .on_closed = on_closed};
    pure_settings s;
    pure_settings_default(&s);
    pure_keygen(s.private_key); /* the server allows any key */
    s.callbacks = &cb;
    pure_ctx *ctx;
    pure_link *link;
    if (pure_ctx_new(&s, &ctx) != 0 || pure_loop_new(ctx, "0.0.0.0:0", &c.loop) != 0)
        return 1;
    /* Messages may be sent at once: they leave when the handshake completes. */
    if (pure_connect(ctx, &to, server_key, "echo", &c, &link, pure_now()) != 0)
        return 1;
    send_more(link, &c);
    pure_loop_run(c.loop, 30ull * 1000000000); /* until on_closed stops it, at most 30 s */
    pure_loop_free(c.loop);
    c.loop = NULL;
    pure_ctx_free(ctx);
    printf("echo_client: %llu of %llu echoed%s\n", (unsigned long long)c.echoed,
           (unsigned long long)c.n, c.ok ? "" : ", some wrong");
    return c.done && c.ok && c.echoed == c.n ? 0 : 1;
}

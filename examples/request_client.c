/* SPDX-License-Identifier: MIT */
/* request_client.c: request/response over one Pure link with many requests outstanding.
 *
 *   request_client HOST:PORT SERVER_PUBLIC_KEY [REQUESTS] [WINDOW]   (default 10000, 256)
 *
 * Each request carries its id in its first 8 bytes; the service (here echo_server) answers
 * with a message that starts with the same id, so replies are matched by id, not by order.
 * Up to WINDOW requests are outstanding at once: no waiting for one reply before the next
 * request. on_acked tells how many requests the server's Pure has received (before their
 * replies come). Prints the requests, replies and mean latency; exits 0 if all were answered. */
#include <pure.h>
#include <pure_loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct client {
    pure_loop *loop;
    uint64_t total, window, next_id, answered, acked, wrong;
    uint64_t *sent_at; /* send time of request id, 0 once answered */
    uint64_t latency_sum;
} client;

static void send_requests(pure_link *link, client *c)
{
    uint8_t req[64] = "request: what is the time?";
    while (c->next_id < c->total && c->next_id - c->answered < c->window) {
        memcpy(req + 32, &c->next_id, 8); /* the id, where the reply will carry it back */
        if (pure_link_send(link, req, sizeof req) < 0)
            return; /* PURE_EAGAIN: on_writable calls again */
        c->sent_at[c->next_id++] = pure_now();
    }
}

static void on_writable(pure_link *link, void *user)
{
    send_requests(link, user);
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    client *c = user;
    uint64_t id;
    if (len < 40 || (memcpy(&id, data + 32, 8), id >= c->next_id) || !c->sent_at[id]) {
        c->wrong++; /* not a reply to an outstanding request */
        return;
    }
    c->latency_sum += pure_now() - c->sent_at[id];
    c->sent_at[id] = 0;
    if (++c->answered == c->total)
        pure_link_close(link, 0, "done");
    else
        send_requests(link, c); /* a slot in the window is free */
}

static void on_acked(pure_link *link, void *user, uint64_t through)
{
    ((client *)user)->acked = through + 1; /* requests 0..through reached the server */
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    client *c = user;
    if (info->error)
        fprintf(stderr, "request_client: %s\n", pure_strerror(info->error));
    if (c->loop)
        pure_loop_stop(c->loop);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: request_client HOST:PORT SERVER_PUBLIC_KEY [REQUESTS] [WINDOW]\n");
        return 2;
    }
    client c = {.total = argc > 3 ? strtoull(argv[3], NULL, 10) : 10000,
                .window = argc > 4 ? strtoull(argv[4], NULL, 10) : 256};
    pure_addr to;
    uint8_t key[PURE_KEY_LEN];
    c.sent_at = calloc(c.total + 1, sizeof *c.sent_at);
    if (!c.sent_at || !c.window || pure_addr_from_string(&to, argv[1]) != 0 ||
        pure_key_from_base64(key, argv[2]) != 0)
        return 2;
    static const pure_callbacks cb = {.on_message = on_message,
                                      .on_writable = on_writable,
                                      .on_closed = on_closed,
                                      .on_acked = on_acked};
    pure_settings s;
    pure_settings_default(&s); /* sets s.version: on_acked needs version 2 */
    pure_keygen(s.private_key);
    s.callbacks = &cb;
    pure_ctx *ctx;
    pure_link *link;
    if (pure_ctx_new(&s, &ctx) != 0 || pure_loop_new(ctx, "0.0.0.0:0", &c.loop) != 0 ||
        pure_connect(ctx, &to, key, "echo", &c, &link, pure_now()) != 0)
        return 1;
    send_requests(link, &c);
    pure_loop_run(c.loop, 60ull * 1000000000);
    pure_loop_free(c.loop);
    c.loop = NULL;
    pure_ctx_free(ctx);
    printf("request_client: %llu requests, %llu answered, %llu acknowledged, %llu wrong, "
           "window %llu, mean latency %.1f us\n",
           (unsigned long long)c.total, (unsigned long long)c.answered, (unsigned long long)c.acked,
           (unsigned long long)c.wrong, (unsigned long long)c.window,
           c.answered ? (double)c.latency_sum / (double)c.answered / 1e3 : 0.0);
    free(c.sent_at);
    return c.answered == c.total && c.wrong == 0 ? 0 : 1;
}

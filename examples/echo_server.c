/* SPDX-License-Identifier: MIT */
/* echo_server.c: a Pure service with pure_loop: every message is sent back on its link.
 *
 *   echo_server [ADDR:PORT]        (default 127.0.0.1:0, any free port)
 *
 * Prints "PORT PUBLIC_KEY" (the key in base64) on stdout, then serves until SIGINT/SIGTERM and
 * closes every link gracefully. Backpressure: when a reply meets PURE_EAGAIN the link stops
 * taking messages (pure_link_pause_recv), keeps the replies of what was already in flight in a
 * small queue, and resumes from on_writable once the queue is out. */
#include <pure.h>
#include <pure_loop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reply { /* a reply waiting for room in the send queue */
    struct reply *next;
    size_t len;
    uint8_t data[];
} reply;

typedef struct conn {
    reply *head, *tail;
} conn; /* per link: the user pointer */

static pure_loop *loop;

static void stop(int sig)
{
    pure_loop_stop(loop);
} /* async-signal-safe */

static int on_accept(pure_link *link, const char *service, const uint8_t key[PURE_KEY_LEN],
                     void *ctx_user)
{
    conn *c = calloc(1, sizeof *c);
    if (!c)
        return PURE_ENOMEM; /* refuses the link */
    pure_link_set_user(link, c);
    return 0;
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    conn *c = user;
    if (!c->head && pure_link_send(link, data, len) != PURE_EAGAIN)
        return;                 /* sent (or the link is closing: on_closed will tell) */
    pure_link_pause_recv(link); /* no new credit: the queue stays bounded by the window */
    reply *r = malloc(sizeof *r + len);
    if (!r) {
        pure_link_abort(link, PURE_CLOSE_APP, "out of memory");
        return;
    }
    r->next = NULL;
    r->len = len;
    memcpy(r->data, data, len);
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
}

static void on_writable(pure_link *link, void *user)
{
    conn *c = user;
    while (c->head) {
        if (pure_link_send(link, c->head->data, c->head->len) == PURE_EAGAIN)
            return; /* on_writable comes again */
        reply *r = c->head;
        c->head = r->next;
        free(r);
    }
    c->tail = NULL;
    pure_link_resume_recv(link);
}

static void on_peer_finished(pure_link *link, void *user)
{
    pure_link_finish(link);
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    conn *c = user; /* the last callback of this link: free its state */
    while (c && c->head) {
        reply *r = c->head;
        c->head = r->next;
        free(r);
    }
    free(c);
}

static int close_link(pure_link *link, void *user, void *arg)
{
    pure_link_close(link, 0, "server stopping");
    return 0;
}

int main(int argc, char **argv)
{
    static const pure_callbacks cb = {.on_accept = on_accept,
                                      .on_message = on_message,
                                      .on_writable = on_writable,
                                      .on_peer_finished = on_peer_finished,
                                      .on_closed = on_closed};
    pure_settings s;
    pure_settings_default(&s);
    if (pure_keygen(s.private_key) != 0) /* a real service loads its key from a file */
        return 1;
    s.allow_any = 1; /* or pure_ctx_allow() each client's public key */
    s.callbacks = &cb;
    pure_ctx *ctx;
    if (pure_ctx_new(&s, &ctx) != 0 || pure_ctx_add_service(ctx, "echo") != 0)
        return 1;
    if (pure_loop_new(ctx, argc > 1 ? argv[1] : "127.0.0.1:0", &loop) != 0) {
        perror("echo_server: cannot listen");
        return 1;
    }
    char key[45];
    pure_key_to_base64(key, pure_ctx_public_key(ctx));
    printf("%u %s\n", pure_loop_port(loop), key);
    fflush(stdout);
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    pure_loop_run(loop, PURE_LOOP_FOREVER);

    pure_ctx_links(ctx, close_link, NULL); /* graceful: what was accepted still goes out */
    pure_loop_run(loop, 500000000);        /* half a second for the closes */
    pure_loop_free(loop);
    pure_ctx_free(ctx); /* on_closed for links still open */
    return 0;
}

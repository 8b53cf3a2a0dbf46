/* SPDX-License-Identifier: MIT */
/* send.c: `pure send`: each line of stdin becomes one message (without its newline) on one
 * link; each message the server sends back is printed on stdout followed by a newline. At end
 * of input the stream is finished and the replies awaited until the server finishes too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char send_help[] =
    "usage: pure send HOST:PORT --peer-key PUBKEY [--service NAME] [--key FILE]\n"
    "                 [--timeout SECONDS] [--handshake-timeout SECONDS] [--channel N]\n"
    "                 [--stats]\n"
    "\n"
    "Sends each line of stdin (without its newline; an empty line is an empty message; a\n"
    "last line without a newline is sent too) as one message to the service at HOST:PORT.\n"
    "Every message the server sends back is written to stdout followed by a newline. At end\n"
    "of input the stream is finished; pure send waits until the server finishes its own\n"
    "(the echo service does once every echo is out), closes the link and exits.\n"
    "\n"
    "  --peer-key PUBKEY   the server's public key (the public_key pure serve printed)\n"
    "  --service NAME      the service to use (default echo; also sink, drain)\n"
    "  --key FILE          our private key (default: a new one for this run)\n"
    "  --timeout SECONDS   give up after this long (default: no limit; the handshake alone\n"
    "                      gives up after 10 s, or half the timeout if that is less)\n"
    "  --handshake-timeout SECONDS\n"
    "                      give up the handshake after this long when nothing answers\n"
    "                      (default 10 s, or half the timeout if that is less; exit 1).\n"
    "                      A closed port, no route or a UDP service that is not Pure\n"
    "                      (exit 1), or a wrong --peer-key (exit 3), is reported at once\n"
    "                      (on loopback within 200 ms; docs/cli.md)\n"
    "  --channel N         send on channel N (0 to 255; default 0, the link's stream): each\n"
    "                      channel is its own ordered sequence, delivered whatever is held up\n"
    "                      on another (docs/channels.md); the echo service answers on it.\n"
    "                      The end of input is told once the server has every message\n"
    "  --stats             print link and loop counters on stderr\n"
    "\n"
    "Lines may be up to 16 MiB long.\n"
    "\n"
    "exit codes: 0 done (with echo: one reply per line); 1 runtime failure (link error,\n"
    "            timeout, missing replies, unreadable stdin); 2 usage error; 3 refused\n"
    "            (unknown service, our key not allowed, wrong --peer-key);\n"
    "            130 / 143 stopped by SIGINT / SIGTERM before done\n";

#define LINE_MAX_BYTES (16u << 20)

typedef struct sender {
    cli_client cl;
    pure_loop *loop;
    pure_link *link;
    uint8_t *buf;
    size_t start, scan, end, cap; /* unsent input is buf[start, end); no newline before scan */
    int eof, watching, can_watch, readable, blocked, finished, peer_finished, closed, code;
    int echo, tty_out;
    uint32_t channel;   /* --channel */
    int finish_pending; /* input ended on a channel: finish once the server has every line */
    uint64_t lines, replies;
    pure_link_stats stats;
} sender;

static void pump(sender *s);

static void fail(sender *s, const char *fmt, const char *arg)
{
    fprintf(stderr, "pure send: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    if (s->code == CLI_OK)
        s->code = CLI_FAIL;
    if (s->link)
        pure_link_abort(s->link, PURE_CLOSE_APP, "client failed");
    else
        pure_loop_stop(s->loop);
}

static void on_stdin(pure_loop *loop, int fd, void *user)
{
    sender *s = user;
    s->readable = 1;
    pump(s);
}

static void set_watch(sender *s, int on)
{
    if (!s->can_watch || s->watching == on)
        return;
    if (on)
        s->watching = pure_loop_watch_fd(s->loop, STDIN_FILENO, on_stdin, s) == 0;
    else {
        pure_loop_unwatch_fd(s->loop, STDIN_FILENO);
        s->watching = 0;
    }
}

/* Sends buf[start, start + len) and skips `skip` more bytes (the newline). Returns 0 when sent,
 * 1 when the backlog is full (wait for on_writable), -1 when the link failed. */
static int send_one(sender *s, size_t len, size_t skip)
{
    int64_t rc = pure_link_send_on(s->link, s->channel, s->buf + s->start, len);
    if (rc == PURE_EAGAIN) {
        s->blocked = 1;
        set_watch(s, 0); /* stop reading stdin until the backlog drains */
        return 1;
    }
    if (rc < 0) {
        if (!pure_err_is_fatal((int)rc))
            fail(s, "sending failed: %s", pure_strerror((int)rc));
        return -1;
    }
    s->lines++;
    s->start += len + skip;
    s->scan = s->start;
    return 0;
}

/* Closes once both streams ended, and on a channel, once the echo service answered every line:
 * a channel's echoes are not ordered with the server's end of stream on channel 0. */
static void maybe_close(sender *s)
{
    if (s->finished && s->peer_finished && s->link && !s->finish_pending &&
        (!s->channel || !s->echo || s->replies >= s->lines))
        pure_link_close(s->link, 0, "done");
}

/* The end of input. Channel 0's FIN follows its messages in order; on another channel it goes
 * once the server acknowledged every line, so the server (which ends its side after the
 * client's) has them all when it hears of the end. */
static void maybe_finish(sender *s)
{
    uint64_t first = 0, next = 0;
    if (!s->link || !s->finish_pending)
        return;
    if (s->channel &&
        (pure_link_channel_unacked(s->link, s->channel, &first, &next) != 0 || first != next))
        return; /* on_channel_acked calls again */
    s->finish_pending = 0;
    pure_link_finish(s->link);
    maybe_close(s);
}

/* Moves input into messages until stdin would block or the backlog is full. */
static void pump(sender *s)
{
    while (s->link && !s->blocked && !s->finished) {
        uint8_t *nl = s->scan < s->end ? memchr(s->buf + s->scan, '\n', s->end - s->scan) : NULL;
        if (nl) {
            if (send_one(s, (size_t)(nl - s->buf) - s->start, 1))
                return;
            continue;
        }
        s->scan = s->end;
        if (s->end - s->start > LINE_MAX_BYTES) {
            char n[32];
            snprintf(n, sizeof n, "%llu", (unsigned long long)s->lines + 1);
            fail(s, "line %s of stdin is longer than 16 MiB", n);
            return;
        }
        if (s->eof) {
            if (s->end > s->start && send_one(s, s->end - s->start, 0))
                return;
            s->finished = 1;
            s->finish_pending = 1;
            set_watch(s, 0);
            maybe_finish(s);
            return;
        }
        if (s->can_watch && !s->readable) {
            set_watch(s, 1); /* read once per readiness: stdin stays blocking for others */
            return;
        }
        if (s->start > 0) { /* keep the unsent part at the front */
            memmove(s->buf, s->buf + s->start, s->end - s->start);
            s->end -= s->start;
            s->scan -= s->start;
            s->start = 0;
        }
        if (s->end == s->cap) {
            size_t nc = s->cap * 2;
            uint8_t *nb = realloc(s->buf, nc);
            if (!nb) {
                fail(s, "out of memory reading a %s line", "long");
                return;
            }
            s->buf = nb;
            s->cap = nc;
        }
        ssize_t r = read(STDIN_FILENO, s->buf + s->end, s->cap - s->end);
        s->readable = 0;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            fail(s, "cannot read stdin: %s", strerror(errno));
            return;
        }
        if (r == 0)
            s->eof = 1;
        s->end += (size_t)r;
    }
}

static void on_established(pure_link *link, void *user)
{
    sender *s = user;
    s->cl.established = 1;
}

static void on_writable(pure_link *link, void *user)
{
    sender *s = user;
    s->blocked = 0;
    pump(s);
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    sender *s = user;
    s->replies++;
    if (fwrite(data, 1, len, stdout) != len || putchar('\n') == EOF ||
        (s->tty_out && fflush(stdout) != 0))
        fail(s, "cannot write the reply to stdout: %s", strerror(errno));
}

static void on_channel_message(pure_link *link, void *user, uint32_t channel, const uint8_t *data,
                               size_t len)
{
    sender *s = user;
    on_message(link, user, data, len);
    maybe_close(s);
}

static void on_channel_acked(pure_link *link, void *user, uint32_t channel, uint64_t id)
{
    maybe_finish(user);
}

static void on_peer_finished(pure_link *link, void *user)
{
    sender *s = user;
    s->peer_finished = 1;
    maybe_close(s);
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    sender *s = user;
    if (!s->loop)
        return; /* pure_ctx_free at exit closing what is left: already reported */
    pure_link_stats_get(link, &s->stats);
    s->closed = 1;
    s->link = NULL;
    if (s->code == CLI_OK) {
        if (info->error)
            s->code = cli_link_failed(&s->cl, info);
        else if (!s->peer_finished) {
            fprintf(stderr, "pure send: the server closed the link%s%s\n",
                    *info->reason ? ": " : "", info->reason);
            s->code = CLI_FAIL;
        }
    }
    pure_loop_stop(s->loop);
}

static const pure_callbacks callbacks = {
    .on_established = on_established,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_peer_finished = on_peer_finished,
    .on_closed = on_closed,
    .on_channel_message = on_channel_message,
    .on_channel_acked = on_channel_acked,
};

int cli_send(int argc, char **argv)
{
    cli_client_opts o = {.timeout = PURE_LOOP_FOREVER, .service = "echo"};
    int orc = cli_client_options("send", send_help,
                                 CLI_OPT_KEY | CLI_OPT_SERVICE | CLI_OPT_STATS | CLI_OPT_CHANNEL,
                                 argc, argv, &o);
    if (orc >= 0)
        return orc;
    const char *peer = o.peer, *keyfile = o.keyfile, *service = o.service;
    uint64_t timeout = o.timeout;
    int stats = o.stats;
    if (argc - optind != 1)
        return cli_usage("send", "expected one HOST:PORT (got %d arguments)", argc - optind);
    sender s;
    memset(&s, 0, sizeof s);
    s.cl.cmd = "send";
    s.cl.service = service;
    s.cl.server = argv[optind];
    s.echo = strcmp(service, "echo") == 0;
    s.channel = (uint32_t)o.channel;
    s.tty_out = isatty(STDOUT_FILENO);
    pure_addr to;
    if (cli_peer_addr("send", argv[optind], &to))
        return CLI_USAGE;
    if (!peer)
        return cli_usage("send", "--peer-key PUBKEY is required (the public_key pure serve "
                                 "printed)");
    uint8_t peer_key[PURE_KEY_LEN];
    if (cli_parse_key("send", "--peer-key", peer, peer_key))
        return CLI_USAGE;
    s.cl.peer_key_text = peer;

    pure_ctx *ctx;
    s.cl.handshake_timeout = o.handshake_timeout;
    int rc = cli_client_open(&s.cl, keyfile, timeout, &callbacks, &to, &ctx, &s.loop);
    if (rc != CLI_OK)
        return rc;
    s.cap = 65536;
    s.buf = malloc(s.cap);
    if (!s.buf) {
        fprintf(stderr, "pure send: out of memory\n");
        pure_loop_free(s.loop);
        pure_ctx_free(ctx);
        return CLI_FAIL;
    }
    /* epoll cannot watch regular files or /dev/null; those never block, so read them as the
     * backlog allows instead */
    s.can_watch = pure_loop_watch_fd(s.loop, STDIN_FILENO, on_stdin, &s) == 0;
    if (s.can_watch)
        pure_loop_unwatch_fd(s.loop, STDIN_FILENO);
    cli_stop_on_signals(s.loop);

    uint64_t t0 = pure_now();
    rc = pure_connect(ctx, &to, peer_key, service, &s, &s.link, t0);
    if (rc) {
        fprintf(stderr, "pure send: cannot start the link: %s\n", pure_strerror(rc));
        s.code = CLI_FAIL;
    } else {
        pump(&s);
        rc = pure_loop_run(s.loop, timeout);
        if (rc) {
            perror("pure send: the socket failed");
            s.code = CLI_FAIL;
        } else if (!s.closed) {
            if (cli_signals_received())
                fprintf(stderr, "pure send: interrupted\n");
            else
                fprintf(stderr, "pure send: timed out after %.1f s (%s)\n",
                        (double)(pure_now() - t0) / 1e9,
                        !s.cl.established ? "the handshake never completed"
                        : !s.finished     ? "stdin still open"
                                          : "the server has not finished");
            pure_link_stats_get(s.link, &s.stats);
            s.code = cli_signals_received() ? cli_signal_exit_code() : CLI_FAIL;
        }
    }
    if (fflush(stdout) != 0 && s.code == CLI_OK) {
        perror("pure send: cannot write stdout");
        s.code = CLI_FAIL;
    }
    if (s.code == CLI_OK && s.echo && s.replies != s.lines) {
        fprintf(stderr, "pure send: the echo service replied to %llu of %llu messages\n",
                (unsigned long long)s.replies, (unsigned long long)s.lines);
        s.code = CLI_FAIL;
    }
    if (stats)
        cli_print_stats("send", &s.stats, s.loop);
    cli_stop_on_signals(NULL);
    cli_linger(s.loop, ctx);
    pure_loop_free(s.loop);
    s.loop = NULL;
    pure_ctx_free(ctx);
    free(s.buf);
    return s.code;
}

/* SPDX-License-Identifier: MIT */
/* drain.c: `pure drain`: the benchmark client. One link to the drain service, N messages of
 * SIZE bytes (byte i of each body is i % 251), then the server's 16-byte count, checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char drain_help[] =
    "usage: pure drain HOST:PORT N SIZE --peer-key PUBKEY [--key FILE]\n"
    "                  [--timeout SECONDS] [--handshake-timeout SECONDS] [--stats]\n"
    "                  [--cc cubic|newreno] [--stats-every SECONDS]\n"
    "\n"
    "Opens one link to the drain service of pure serve at HOST:PORT, sends N messages of\n"
    "SIZE body bytes (byte i of each body is i % 251), finishes the stream, waits for the\n"
    "server's count (16 bytes: u64 messages, u64 bytes, big-endian), closes the link and\n"
    "prints one JSON line on stdout:\n"
    "  {\"messages\": N, \"size\": SIZE, \"bytes\": N*SIZE, \"seconds\": WALL,\n"
    "   \"server_messages\": M, \"server_bytes\": B, \"client_cpu_us_per_message\": CPU}\n"
    "(seconds and CPU, user + system, cover connect to count).\n"
    "\n"
    "  --peer-key PUBKEY   the server's public key (the public_key pure serve printed)\n"
    "  --key FILE          our private key (default: a new one for this run)\n"
    "  --timeout SECONDS   give up after this long (default 300; the handshake alone\n"
    "                      gives up after 10 s, or half the timeout if that is less)\n"
    "  --handshake-timeout SECONDS\n"
    "                      give up the handshake after this long when nothing answers\n"
    "                      (default 10 s, or half the timeout if that is less; exit 1).\n"
    "                      A closed port, no route or a UDP service that is not Pure\n"
    "                      (exit 1), or a wrong --peer-key (exit 3), is reported at once\n"
    "                      (on loopback within 200 ms; docs/cli.md)\n"
    "  --stats             print link and loop counters on stderr (RTT, cwnd, losses,\n"
    "                      retransmissions, datagrams per sendmsg/recvmsg, GRO)\n"
    "  --cc cubic|newreno  the congestion controller of our side, the sender's (default\n"
    "                      cubic; docs/congestion.md)\n"
    "  --stats-every SECONDS\n"
    "                      every SECONDS (0.001 or more) while the link is open, one JSON\n"
    "                      line on stderr with the sender's view: t (seconds since\n"
    "                      start), cwnd, bytes_in_flight, rtt_us, rtt_min_us,\n"
    "                      packets_sent, packets_lost, random_losses, messages_sent,\n"
    "                      messages_acked, datagram_size, paced_bursts, ecn_ce_reported\n"
    "                      (docs/cli.md; how a path's window moves: docs/congestion.md)\n"
    "\n"
    "exit codes: 0 the server counted N messages and N*SIZE bytes; 1 it counted otherwise,\n"
    "            the link failed or the timeout passed; 2 usage error; 3 refused (unknown\n"
    "            service, our key not allowed, wrong --peer-key);\n"
    "            130 / 143 stopped by SIGINT / SIGTERM before done\n";

typedef struct drain {
    cli_client cl;
    pure_loop *loop;
    pure_link *link;
    uint64_t n, size, sent;
    uint8_t *body;
    int finished, replied, closed, code;
    uint64_t server_messages, server_bytes;
    pure_link_stats stats;
} drain;

static void fail_local(drain *d, int64_t rc)
{
    fprintf(stderr, "pure drain: sending failed: %s\n", pure_strerror((int)rc));
    d->code = CLI_FAIL;
    pure_link_abort(d->link, PURE_CLOSE_APP, "client send failed");
}

/* Fills the backlog; the rest follows from on_writable. */
static void pump(drain *d)
{
    /* pure_link_send runs no callback, so the loop keeps the link, the body and the count in
     * registers (through d they were reloaded after every call: 15 instructions a message) */
    pure_link *link = d->link;
    const uint8_t *body = d->body;
    uint64_t size = d->size, sent = d->sent, n = d->n;
    while (link && sent < n) {
        int64_t rc = pure_link_send(link, body, size);
        if (rc == PURE_EAGAIN)
            break;
        if (rc < 0) {
            d->sent = sent;
            if (!pure_err_is_fatal((int)rc))
                fail_local(d, rc);
            return;
        }
        sent++;
    }
    d->sent = sent;
    if (sent < n)
        return;
    if (d->link && !d->finished) {
        d->finished = 1;
        pure_link_finish(d->link);
    }
}

static void on_established(pure_link *link, void *user)
{
    drain *d = user;
    d->cl.established = 1;
}

static void on_writable(pure_link *link, void *user)
{
    pump(user);
}

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    drain *d = user;
    if (d->replied || len != 16) {
        fprintf(stderr,
                "pure drain: unexpected %zu-byte message from the server (is that a pure serve "
                "drain service?)\n",
                len);
        d->code = CLI_FAIL;
        pure_link_abort(link, PURE_CLOSE_APP, "unexpected reply");
        return;
    }
    d->replied = 1;
    d->server_messages = be64(data);
    d->server_bytes = be64(data + 8);
    pure_link_close(link, 0, "done");
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    drain *d = user;
    if (!d->loop)
        return; /* pure_ctx_free at exit closing what is left: already reported */
    pure_link_stats_get(link, &d->stats);
    d->closed = 1;
    d->link = NULL;
    if (info->error && !d->replied && d->code == CLI_OK)
        d->code = cli_link_failed(&d->cl, info);
    else if (!d->replied && d->code == CLI_OK) {
        fprintf(stderr, "pure drain: the server closed the link before confirming the count%s%s\n",
                *info->reason ? ": " : "", info->reason);
        d->code = CLI_FAIL;
    }
    pure_loop_stop(d->loop);
}

/* --stats-every: one JSON line of the link's sender-side counters on stderr (stdout keeps the
 * one result line scripts read). */
static void print_link_stats(const drain *d, uint64_t t_ns)
{
    pure_link_stats s;
    pure_link_stats_get(d->link, &s);
    fprintf(stderr,
            "{\"stats\": \"link\", \"t\": %.3f, \"cwnd\": %llu, \"bytes_in_flight\": %llu, "
            "\"rtt_us\": %.1f, \"rtt_min_us\": %.1f, \"packets_sent\": %llu, "
            "\"packets_lost\": %llu, \"random_losses\": %llu, \"messages_sent\": %llu, "
            "\"messages_acked\": %llu, \"datagram_size\": %llu, \"paced_bursts\": %llu, "
            "\"ecn_ce_reported\": %llu}\n",
            (double)t_ns / 1e9, (unsigned long long)s.cwnd, (unsigned long long)s.bytes_in_flight,
            (double)s.rtt_ns / 1e3, (double)s.rtt_min_ns / 1e3, (unsigned long long)s.packets_sent,
            (unsigned long long)s.packets_lost, (unsigned long long)s.random_losses,
            (unsigned long long)s.messages_sent, (unsigned long long)s.messages_acked,
            (unsigned long long)s.datagram_size, (unsigned long long)s.paced_bursts,
            (unsigned long long)s.ecn_ce_reported);
}

/* Runs the loop until the link closes, a signal stops it or `timeout` has passed since t0; with
 * `every` (ns, 0: none), prints a stats line at each multiple of it after t0 while the link is
 * open (ticks the loop was too busy for are skipped, not printed late in a row). */
static int drain_run(drain *d, uint64_t t0, uint64_t timeout, uint64_t every)
{
    if (!every)
        return pure_loop_run(d->loop, timeout);
    uint64_t end = timeout > UINT64_MAX - t0 ? UINT64_MAX : t0 + timeout, next = t0 + every;
    for (;;) {
        uint64_t now = pure_now();
        if (now >= end)
            return 0;
        uint64_t until = next < end ? next : end;
        int rc = pure_loop_run(d->loop, until > now ? until - now : 0);
        if (rc)
            return rc;
        if (d->closed || !d->link || cli_signals_received())
            return 0;
        now = pure_now();
        if (now >= next) {
            print_link_stats(d, now - t0);
            next += every * ((now - next) / every + 1);
        }
    }
}

static const pure_callbacks callbacks = {
    .on_established = on_established,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_closed = on_closed,
};

int cli_drain(int argc, char **argv)
{
    cli_client_opts o = {.timeout = 300ull * 1000000000u};
    int orc = cli_client_options("drain", drain_help,
                                 CLI_OPT_KEY | CLI_OPT_STATS | CLI_OPT_CC | CLI_OPT_STATS_EVERY,
                                 argc, argv, &o);
    if (orc >= 0)
        return orc;
    const char *peer = o.peer, *keyfile = o.keyfile;
    uint64_t timeout = o.timeout;
    int stats = o.stats;
    if (argc - optind != 3)
        return cli_usage("drain", "expected HOST:PORT N SIZE (got %d argument%s)", argc - optind,
                         argc - optind == 1 ? "" : "s");
    drain d;
    memset(&d, 0, sizeof d);
    d.cl.cmd = "drain";
    d.cl.service = "drain";
    d.cl.server = argv[optind];
    pure_addr to;
    if (cli_peer_addr("drain", argv[optind], &to))
        return CLI_USAGE;
    if (cli_parse_count(argv[optind + 1], UINT64_MAX / (16u << 20), &d.n))
        return cli_usage("drain", "N '%s' is not a count of messages", argv[optind + 1]);
    if (cli_parse_count(argv[optind + 2], 16u << 20, &d.size))
        return cli_usage("drain", "SIZE '%s' is not a message size in bytes (0 to 16777216)",
                         argv[optind + 2]);
    if (!peer)
        return cli_usage("drain", "--peer-key PUBKEY is required (the public_key pure serve "
                                  "printed)");
    uint8_t peer_key[PURE_KEY_LEN];
    if (cli_parse_key("drain", "--peer-key", peer, peer_key))
        return CLI_USAGE;
    d.cl.peer_key_text = peer;

    pure_ctx *ctx;
    d.cl.handshake_timeout = o.handshake_timeout;
    d.cl.congestion = o.congestion;
    int rc = cli_client_open(&d.cl, keyfile, timeout, &callbacks, &to, &ctx, &d.loop);
    if (rc != CLI_OK)
        return rc;
    /* the body is built once: every message is the same bytes */
    d.body = malloc(d.size ? d.size : 1);
    if (!d.body) {
        fprintf(stderr, "pure drain: out of memory\n");
        pure_loop_free(d.loop);
        pure_ctx_free(ctx);
        return CLI_FAIL;
    }
    for (uint64_t i = 0; i < d.size; i++)
        d.body[i] = (uint8_t)(i % 251);
    cli_stop_on_signals(d.loop);

    double cpu0 = cli_cpu_seconds();
    uint64_t t0 = pure_now();
    rc = pure_connect(ctx, &to, peer_key, "drain", &d, &d.link, t0);
    if (rc) {
        fprintf(stderr, "pure drain: cannot start the link: %s\n", pure_strerror(rc));
        d.code = CLI_FAIL;
    } else {
        pump(&d);
        rc = drain_run(&d, t0, timeout, o.stats_every);
    }
    uint64_t t1 = pure_now();
    double cpu = cli_cpu_seconds() - cpu0;
    if (rc) {
        perror("pure drain: the socket failed");
        d.code = CLI_FAIL;
    } else if (!d.closed && d.link) {
        if (cli_signals_received())
            fprintf(stderr, "pure drain: interrupted after %llu of %llu messages\n",
                    (unsigned long long)d.sent, (unsigned long long)d.n);
        else
            fprintf(stderr, "pure drain: timed out after %.1f s: sent %llu of %llu messages, %s\n",
                    (double)(t1 - t0) / 1e9, (unsigned long long)d.sent, (unsigned long long)d.n,
                    d.cl.established ? "no count from the server yet"
                                     : "the handshake never completed");
        pure_link_stats_get(d.link, &d.stats);
        d.code = cli_signals_received() ? cli_signal_exit_code() : CLI_FAIL;
    }
    if (d.replied) {
        printf("{\"messages\": %llu, \"size\": %llu, \"bytes\": %llu, \"seconds\": %.6f, "
               "\"server_messages\": %llu, \"server_bytes\": %llu, "
               "\"client_cpu_us_per_message\": %.4f}\n",
               (unsigned long long)d.n, (unsigned long long)d.size,
               (unsigned long long)(d.n * d.size), (double)(t1 - t0) / 1e9,
               (unsigned long long)d.server_messages, (unsigned long long)d.server_bytes,
               d.n ? cpu * 1e6 / (double)d.n : 0.0);
        fflush(stdout);
        if (d.code == CLI_OK && (d.server_messages != d.n || d.server_bytes != d.n * d.size)) {
            fprintf(stderr,
                    "pure drain: count mismatch: sent %llu messages (%llu bytes), the server "
                    "counted %llu (%llu bytes)\n",
                    (unsigned long long)d.n, (unsigned long long)(d.n * d.size),
                    (unsigned long long)d.server_messages, (unsigned long long)d.server_bytes);
            d.code = CLI_FAIL;
        }
    }
    if (stats)
        cli_print_stats("drain", &d.stats, d.loop);
    cli_stop_on_signals(NULL);
    cli_linger(d.loop, ctx);
    pure_loop_free(d.loop);
    d.loop = NULL;
    pure_ctx_free(ctx);
    free(d.body);
    return d.code;
}

/* SPDX-License-Identifier: MIT */
/* ping.c: `pure ping`: the latency client. One link to the echo service, N round trips of one
 * SIZE-byte message each (one in flight at a time), every echo checked byte for byte; prints
 * the round-trip percentiles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char ping_help[] =
    "usage: pure ping HOST:PORT N SIZE --peer-key PUBKEY [--key FILE] [--service NAME]\n"
    "                 [--timeout SECONDS] [--handshake-timeout SECONDS] [--stats]\n"
    "\n"
    "Opens one link to the echo service of pure serve at HOST:PORT and, once the handshake\n"
    "is done, makes N round trips: sends one message of SIZE body bytes (byte i of the body\n"
    "is i % 251), waits for its echo, checks it byte for byte, sends the next. Each round\n"
    "trip is timed with CLOCK_MONOTONIC from the send to the echo's arrival. Then closes the\n"
    "link and prints one JSON line on stdout:\n"
    "  {\"round_trips\": N, \"size\": SIZE, \"echoes\": E, \"mismatches\": M, \"seconds\": WALL,\n"
    "   \"mean_us\": ..., \"min_us\": ..., \"p50_us\": ..., \"p90_us\": ..., \"p99_us\": ...,\n"
    "   \"max_us\": ..., \"client_cpu_us_per_round_trip\": CPU}\n"
    "(seconds and CPU, user + system, cover the N round trips, not the handshake).\n"
    "\n"
    "  --peer-key PUBKEY   the server's public key (the public_key pure serve printed)\n"
    "  --key FILE          our private key (default: a new one for this run)\n"
    "  --service NAME      the service to ask for (default echo)\n"
    "  --timeout SECONDS   give up after this long (default 300; the handshake alone\n"
    "                      gives up after 10 s, or half the timeout if that is less)\n"
    "  --handshake-timeout SECONDS\n"
    "                      give up the handshake after this long when nothing answers\n"
    "                      (default 10 s, or half the timeout if that is less; exit 1).\n"
    "                      A closed port, no route or a UDP service that is not Pure\n"
    "                      (exit 1), or a wrong --peer-key (exit 3), is reported at once\n"
    "                      (on loopback within 200 ms; docs/cli.md)\n"
    "  --stats             print link and loop counters on stderr\n"
    "\n"
    "exit codes: 0 N echoes came back, each identical to what was sent; 1 an echo differed\n"
    "            or was missing, the link failed or the timeout passed; 2 usage error;\n"
    "            3 refused (unknown service, our key not allowed, wrong --peer-key);\n"
    "            130 / 143 stopped by SIGINT / SIGTERM before done\n";

typedef struct ping {
    cli_client cl;
    pure_loop *loop;
    pure_link *link;
    uint64_t n, size, done, mismatches;
    uint8_t *body;
    uint64_t *rtt;   /* ns, one per round trip */
    uint64_t t_send; /* when the message in flight was accepted */
    uint64_t t_first, t_last;
    double cpu_first;
    int waiting; /* a send waits for on_writable */
    int closed, code;
    pure_link_stats stats;
} ping;

/* Sends the next message and starts its clock. */
static void send_next(ping *p)
{
    p->t_send = pure_now();
    int64_t rc = pure_link_send(p->link, p->body, p->size);
    if (rc == PURE_EAGAIN) {
        p->waiting = 1; /* cannot happen with one small message in flight; handled anyway */
        return;
    }
    p->waiting = 0;
    if (rc < 0) {
        fprintf(stderr, "pure ping: sending failed: %s\n", pure_strerror((int)rc));
        p->code = CLI_FAIL;
        pure_link_abort(p->link, PURE_CLOSE_APP, "client send failed");
    }
}

static void on_established(pure_link *link, void *user)
{
    ping *p = user;
    p->cl.established = 1;
    p->cpu_first = cli_cpu_seconds();
    p->t_first = pure_now();
    if (p->n)
        send_next(p);
    else
        pure_link_close(link, 0, "done");
}

static void on_writable(pure_link *link, void *user)
{
    ping *p = user;
    if (p->waiting)
        send_next(p);
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    ping *p = user;
    uint64_t now = pure_now();
    if (p->done >= p->n || p->waiting) {
        fprintf(stderr, "pure ping: an echo arrived with no message in flight (%zu bytes)\n", len);
        p->mismatches++;
        p->code = CLI_FAIL;
        pure_link_abort(link, PURE_CLOSE_APP, "unexpected echo");
        return;
    }
    if (len != p->size || memcmp(data, p->body, len) != 0) {
        if (p->mismatches++ < 3)
            fprintf(stderr,
                    "pure ping: echo %llu differs from what was sent (%zu bytes back, "
                    "%llu sent)\n",
                    (unsigned long long)p->done, len, (unsigned long long)p->size);
    }
    p->rtt[p->done++] = now - p->t_send;
    if (p->done < p->n) {
        send_next(p);
        return;
    }
    p->t_last = now;
    pure_link_close(link, 0, "done");
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    ping *p = user;
    if (!p->loop)
        return; /* pure_ctx_free at exit closing what is left: already reported */
    pure_link_stats_get(link, &p->stats);
    p->closed = 1;
    p->link = NULL;
    if (p->done < p->n && p->code == CLI_OK) {
        if (info->error)
            p->code = cli_link_failed(&p->cl, info);
        else {
            fprintf(stderr, "pure ping: the server closed the link after %llu of %llu echoes%s%s\n",
                    (unsigned long long)p->done, (unsigned long long)p->n,
                    *info->reason ? ": " : "", info->reason);
            p->code = CLI_FAIL;
        }
    }
    pure_loop_stop(p->loop);
}

static const pure_callbacks callbacks = {
    .on_established = on_established,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_closed = on_closed,
};

int cli_ping(int argc, char **argv)
{
    cli_client_opts o = {.timeout = 300ull * 1000000000u, .service = "echo"};
    int orc = cli_client_options("ping", ping_help, CLI_OPT_KEY | CLI_OPT_SERVICE | CLI_OPT_STATS,
                                 argc, argv, &o);
    if (orc >= 0)
        return orc;
    const char *peer = o.peer, *keyfile = o.keyfile, *service = o.service;
    uint64_t timeout = o.timeout;
    int stats = o.stats;
    if (argc - optind != 3)
        return cli_usage("ping", "expected HOST:PORT N SIZE (got %d argument%s)", argc - optind,
                         argc - optind == 1 ? "" : "s");
    ping p;
    memset(&p, 0, sizeof p);
    p.cl.cmd = "ping";
    p.cl.service = service;
    p.cl.server = argv[optind];
    pure_addr to;
    if (cli_peer_addr("ping", argv[optind], &to))
        return CLI_USAGE;
    if (cli_parse_count(argv[optind + 1], 100000000u, &p.n))
        return cli_usage("ping", "N '%s' is not a count of round trips (0 to 100000000)",
                         argv[optind + 1]);
    if (cli_parse_count(argv[optind + 2], 16u << 20, &p.size))
        return cli_usage("ping", "SIZE '%s' is not a message size in bytes (0 to 16777216)",
                         argv[optind + 2]);
    if (!peer)
        return cli_usage("ping", "--peer-key PUBKEY is required (the public_key pure serve "
                                 "printed)");
    uint8_t peer_key[PURE_KEY_LEN];
    if (cli_parse_key("ping", "--peer-key", peer, peer_key))
        return CLI_USAGE;
    p.cl.peer_key_text = peer;

    p.body = malloc(p.size ? p.size : 1);
    p.rtt = malloc((p.n ? p.n : 1) * sizeof *p.rtt);
    if (!p.body || !p.rtt) {
        fprintf(stderr, "pure ping: out of memory\n");
        free(p.body);
        free(p.rtt);
        return CLI_FAIL;
    }
    for (uint64_t i = 0; i < p.size; i++)
        p.body[i] = (uint8_t)(i % 251);

    pure_ctx *ctx;
    p.cl.handshake_timeout = o.handshake_timeout;
    int rc = cli_client_open(&p.cl, keyfile, timeout, &callbacks, &to, &ctx, &p.loop);
    if (rc != CLI_OK) {
        free(p.body);
        free(p.rtt);
        return rc;
    }
    cli_stop_on_signals(p.loop);
    uint64_t t0 = pure_now();
    rc = pure_connect(ctx, &to, peer_key, service, &p, &p.link, t0);
    if (rc) {
        fprintf(stderr, "pure ping: cannot start the link: %s\n", pure_strerror(rc));
        p.code = CLI_FAIL;
    } else {
        rc = pure_loop_run(p.loop, timeout);
    }
    double cpu = cli_cpu_seconds() - p.cpu_first;
    if (rc) {
        perror("pure ping: the socket failed");
        p.code = CLI_FAIL;
    } else if (!p.closed && p.link) {
        if (cli_signals_received())
            fprintf(stderr, "pure ping: interrupted after %llu of %llu round trips\n",
                    (unsigned long long)p.done, (unsigned long long)p.n);
        else
            fprintf(stderr, "pure ping: timed out after %.1f s: %llu of %llu round trips, %s\n",
                    (double)(pure_now() - t0) / 1e9, (unsigned long long)p.done,
                    (unsigned long long)p.n,
                    p.cl.established ? "waiting for an echo" : "the handshake never completed");
        pure_link_stats_get(p.link, &p.stats);
        p.code = cli_signals_received() ? cli_signal_exit_code() : CLI_FAIL;
    }
    if (p.done == p.n && p.cl.established) {
        double sum = 0;
        for (uint64_t i = 0; i < p.n; i++)
            sum += (double)p.rtt[i];
        cli_sort_u64(p.rtt, p.n);
        double mean = p.n ? sum / (double)p.n / 1e3 : 0;
        double secs = (double)(p.t_last - p.t_first) / 1e9;
        if (p.n)
            printf("{\"round_trips\": %llu, \"size\": %llu, \"echoes\": %llu, \"mismatches\": "
                   "%llu, \"seconds\": %.6f, \"mean_us\": %.2f, \"min_us\": %.2f, \"p50_us\": "
                   "%.2f, \"p90_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f, "
                   "\"client_cpu_us_per_round_trip\": %.3f}\n",
                   (unsigned long long)p.n, (unsigned long long)p.size, (unsigned long long)p.done,
                   (unsigned long long)p.mismatches, secs, mean, cli_quantile_us(p.rtt, p.n, 0),
                   cli_quantile_us(p.rtt, p.n, 0.5), cli_quantile_us(p.rtt, p.n, 0.9),
                   cli_quantile_us(p.rtt, p.n, 0.99), cli_quantile_us(p.rtt, p.n, 1),
                   cpu * 1e6 / (double)p.n);
        else
            printf("{\"round_trips\": 0, \"size\": %llu, \"echoes\": 0, \"mismatches\": 0}\n",
                   (unsigned long long)p.size);
        fflush(stdout);
        if (p.mismatches && p.code == CLI_OK) {
            fprintf(stderr, "pure ping: %llu of %llu echoes differed from what was sent\n",
                    (unsigned long long)p.mismatches, (unsigned long long)p.n);
            p.code = CLI_FAIL;
        }
    }
    if (stats)
        cli_print_stats("ping", &p.stats, p.loop);
    cli_stop_on_signals(NULL);
    cli_linger(p.loop, ctx);
    pure_loop_free(p.loop);
    p.loop = NULL;
    pure_ctx_free(ctx);
    free(p.body);
    free(p.rtt);
    return p.code;
}

/* SPDX-License-Identifier: MIT */
/* bench_handshakes.c: `pure bench handshakes`: N links one after another from one context and
 * one socket, each {connect, send one message, wait for its echo, close}; links per second. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char handshakes_help[] =
    "usage: pure bench handshakes HOST:PORT N --peer-key PUBKEY [--size SIZE]\n"
    "                             [--service NAME] [--timeout SECONDS]\n"
    "                             [--handshake-timeout SECONDS]\n"
    "\n"
    "Opens N links to the echo service of pure serve at HOST:PORT, one after another: each\n"
    "one is a full Noise IK handshake (new ephemeral keys; one client static key for the\n"
    "run), one message of SIZE body bytes (default 61; byte i is i % 251) sent with the\n"
    "handshake, its echo checked byte for byte, then a graceful close; the next link starts\n"
    "as soon as the close is sent. Prints one JSON line on stdout:\n"
    "  {\"handshakes\": N, \"size\": SIZE, \"ok\": K, \"mismatches\": M, \"seconds\": WALL,\n"
    "   \"per_second\": N/WALL, \"mean_us\": ..., \"p50_us\": ..., \"p99_us\": ...,\n"
    "   \"client_cpu_us_per_handshake\": CPU}\n"
    "(seconds and CPU from the first connect to the last echo; mean/p50/p99: connect to echo\n"
    "of one link).\n"
    "\n"
    "  --peer-key PUBKEY   the server's public key (the public_key pure serve printed)\n"
    "  --size SIZE         body bytes of each link's one message (default 61)\n"
    "  --service NAME      the service to ask for (default echo)\n"
    "  --timeout SECONDS   give up after this long (default 300; one handshake gives up\n"
    "                      after 10 s, or half the timeout if that is less)\n"
    "  --handshake-timeout SECONDS\n"
    "                      give up the handshake after this long when nothing answers\n"
    "                      (default 10 s, or half the timeout if that is less; exit 1).\n"
    "                      A closed port, no route or a UDP service that is not Pure\n"
    "                      (exit 1), or a wrong --peer-key (exit 3), is reported at once\n"
    "                      (on loopback within 200 ms; docs/cli.md)\n"
    "\n"
    "exit codes: 0 N links each echoed their message exactly; 1 a link failed, an echo\n"
    "            differed or the timeout passed; 2 usage error; 3 refused (unknown service,\n"
    "            our key not allowed, wrong --peer-key);\n"
    "            130 / 143 stopped by SIGINT / SIGTERM before done\n";

typedef struct hs {
    cli_client cl;
    pure_ctx *ctx;
    pure_loop *loop;
    pure_addr to;
    uint8_t peer[PURE_KEY_LEN];
    uint64_t n, size, started, done, mismatches;
    uint8_t *body;
    uint64_t *lat;   /* ns per link: connect to echo */
    uint64_t t_conn; /* when the current link started */
    pure_link *cur;
    uint64_t t_last;
    int code;
} hs;

static void fail(hs *h, int code)
{
    if (h->code == CLI_OK)
        h->code = code;
    pure_loop_stop(h->loop);
}

/* Starts the next link with its one message queued behind the handshake. */
static void start_next(hs *h)
{
    h->t_conn = pure_now();
    int rc = pure_connect(h->ctx, &h->to, h->peer, h->cl.service, h, &h->cur, pure_now());
    if (rc) {
        fprintf(stderr, "pure bench handshakes: cannot start link %llu: %s\n",
                (unsigned long long)h->started, pure_strerror(rc));
        h->cur = NULL;
        fail(h, CLI_FAIL);
        return;
    }
    h->started++;
    h->cl.established = 0;
    int64_t id = pure_link_send(h->cur, h->body, h->size);
    if (id < 0) {
        fprintf(stderr, "pure bench handshakes: sending on link %llu failed: %s\n",
                (unsigned long long)h->started - 1, pure_strerror((int)id));
        pure_link_abort(h->cur, PURE_CLOSE_APP, "client send failed");
        h->cur = NULL;
        fail(h, CLI_FAIL);
    }
}

static void on_established(pure_link *link, void *user)
{
    hs *h = user;
    if (link == h->cur)
        h->cl.established = 1;
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    hs *h = user;
    if (link != h->cur) {
        fprintf(stderr, "pure bench handshakes: a message on a link already done\n");
        h->mismatches++;
        fail(h, CLI_FAIL);
        return;
    }
    uint64_t now = pure_now();
    if (len != h->size || memcmp(data, h->body, len) != 0) {
        if (h->mismatches++ < 3)
            fprintf(stderr,
                    "pure bench handshakes: link %llu's echo differs from what was sent "
                    "(%zu bytes back, %llu sent)\n",
                    (unsigned long long)h->done, len, (unsigned long long)h->size);
    }
    h->lat[h->done++] = now - h->t_conn;
    h->cur = NULL;
    pure_link_close(link, 0, "done");
    if (h->done < h->n)
        start_next(h);
    else {
        h->t_last = now;
        pure_loop_stop(h->loop);
    }
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    hs *h = user;
    if (!h->loop)
        return; /* pure_ctx_free at exit closing what is left: already reported */
    if (link != h->cur)
        return; /* a finished link's close completing */
    h->cur = NULL;
    if (info->error)
        fail(h, cli_link_failed(&h->cl, info));
    else {
        fprintf(stderr, "pure bench handshakes: the server closed link %llu before its echo%s%s\n",
                (unsigned long long)h->done, *info->reason ? ": " : "", info->reason);
        fail(h, CLI_FAIL);
    }
}

static const pure_callbacks callbacks = {
    .on_established = on_established,
    .on_message = on_message,
    .on_closed = on_closed,
};

int cli_bench_handshakes(int argc, char **argv)
{
    hs h;
    memset(&h, 0, sizeof h);
    cli_client_opts o = {.timeout = 300ull * 1000000000u, .service = "echo", .size = 61};
    int orc = cli_client_options("bench handshakes", handshakes_help,
                                 CLI_OPT_SERVICE | CLI_OPT_SIZE, argc, argv, &o);
    if (orc >= 0)
        return orc;
    const char *peer = o.peer, *service = o.service;
    uint64_t timeout = o.timeout;
    h.size = o.size;
    if (argc - optind != 2)
        return cli_usage("bench handshakes", "expected HOST:PORT N (got %d argument%s)",
                         argc - optind, argc - optind == 1 ? "" : "s");
    h.cl.cmd = "bench handshakes";
    h.cl.service = service;
    h.cl.server = argv[optind];
    if (cli_peer_addr("bench handshakes", argv[optind], &h.to))
        return CLI_USAGE;
    if (cli_parse_count(argv[optind + 1], 100000000u, &h.n) || h.n == 0)
        return cli_usage("bench handshakes", "N '%s' is not a count of links (1 to 100000000)",
                         argv[optind + 1]);
    if (!peer)
        return cli_usage("bench handshakes", "--peer-key PUBKEY is required (the public_key "
                                             "pure serve printed)");
    if (cli_parse_key("bench handshakes", "--peer-key", peer, h.peer))
        return CLI_USAGE;
    h.cl.peer_key_text = peer;

    h.body = malloc(h.size ? h.size : 1);
    h.lat = malloc(h.n * sizeof *h.lat);
    if (!h.body || !h.lat) {
        fprintf(stderr, "pure bench handshakes: out of memory\n");
        free(h.body);
        free(h.lat);
        return CLI_FAIL;
    }
    for (uint64_t i = 0; i < h.size; i++)
        h.body[i] = (uint8_t)(i % 251);
    h.cl.handshake_timeout = o.handshake_timeout;
    int rc = cli_client_open(&h.cl, NULL, timeout, &callbacks, &h.to, &h.ctx, &h.loop);
    if (rc != CLI_OK) {
        free(h.body);
        free(h.lat);
        return rc;
    }
    cli_stop_on_signals(h.loop);
    double cpu0 = cli_cpu_seconds();
    uint64_t t0 = pure_now();
    start_next(&h);
    if (h.code == CLI_OK)
        rc = pure_loop_run(h.loop, timeout);
    double cpu = cli_cpu_seconds() - cpu0;
    if (rc) {
        perror("pure bench handshakes: the socket failed");
        h.code = CLI_FAIL;
    } else if (h.done < h.n && h.code == CLI_OK) {
        if (cli_signals_received())
            fprintf(stderr, "pure bench handshakes: interrupted after %llu of %llu links\n",
                    (unsigned long long)h.done, (unsigned long long)h.n);
        else
            fprintf(stderr,
                    "pure bench handshakes: timed out after %.1f s: %llu of %llu links "
                    "done, the last one %s\n",
                    (double)(pure_now() - t0) / 1e9, (unsigned long long)h.done,
                    (unsigned long long)h.n,
                    h.cl.established ? "waiting for its echo" : "still in its handshake");
        h.code = cli_signals_received() ? cli_signal_exit_code() : CLI_FAIL;
    }
    cli_linger(h.loop, h.ctx); /* let the last CLOSE packets go out */
    if (h.done == h.n) {
        double sum = 0;
        for (uint64_t i = 0; i < h.n; i++)
            sum += (double)h.lat[i];
        cli_sort_u64(h.lat, h.n);
        double secs = (double)(h.t_last - t0) / 1e9;
        printf("{\"handshakes\": %llu, \"size\": %llu, \"ok\": %llu, \"mismatches\": %llu, "
               "\"seconds\": %.6f, \"per_second\": %.1f, \"mean_us\": %.1f, \"p50_us\": %.1f, "
               "\"p99_us\": %.1f, \"client_cpu_us_per_handshake\": %.2f}\n",
               (unsigned long long)h.n, (unsigned long long)h.size,
               (unsigned long long)(h.n - h.mismatches), (unsigned long long)h.mismatches, secs,
               secs > 0 ? (double)h.n / secs : 0.0, sum / (double)h.n / 1e3,
               cli_quantile_us(h.lat, h.n, 0.5), cli_quantile_us(h.lat, h.n, 0.99),
               cpu * 1e6 / (double)h.n);
        fflush(stdout);
        if (h.mismatches && h.code == CLI_OK) {
            fprintf(stderr,
                    "pure bench handshakes: %llu of %llu echoes differed from what was "
                    "sent\n",
                    (unsigned long long)h.mismatches, (unsigned long long)h.n);
            h.code = CLI_FAIL;
        }
    }
    cli_stop_on_signals(NULL);
    pure_loop_free(h.loop);
    h.loop = NULL;
    pure_ctx_free(h.ctx);
    free(h.body);
    free(h.lat);
    return h.code;
}

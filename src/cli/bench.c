/* SPDX-License-Identifier: MIT */
/* bench.c: `pure bench`: the entry for Pure's own benchmarks (a table of them: `idle`,
 * `handshakes`).
 * The comparison with other stacks is bench/run.py. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char bench_help[] =
    "usage: pure bench idle --links K --idle SECONDS [--keepalive SECONDS] [--json]\n"
    "       pure bench handshakes HOST:PORT N --peer-key PUBKEY [--size SIZE]\n"
    "       pure bench [--help]\n"
    "\n"
    "  idle   K links between two processes on loopback left idle, then woken: memory per\n"
    "         link, CPU, packets and timers while idle, handshake and wake-up times\n"
    "         (pure bench idle --help)\n"
    "  handshakes  N links one after another to an echo service (handshake, one message,\n"
    "         its echo, close): links per second (pure bench handshakes --help)\n"
    "\n"
    "Pure's benchmarks are run by bench/run.py, which builds Pure and its peers\n"
    "(ngtcp2, quinn, TCP+TLS, raw UDP) and runs the same drain through each:\n"
    "  python3 bench/run.py drain            # see bench/README.md\n"
    "It drives this program as `pure serve --ephemeral --listen 127.0.0.1:0 --services drain`\n"
    "and `pure drain 127.0.0.1:PORT N SIZE --peer-key KEY`. For one quick measurement,\n"
    "run scripts/drain_demo.sh.\n"
    "Pure's own cost without sockets or a second process is measured by\n"
    "build/transport_bench N SIZE (both link ends in one process).\n"
    "\n"
    "exit codes: 0 done; 1 the benchmark failed; 2 usage error or no benchmark of that name\n";

static const cli_cmd benches[] = {
    {"idle", cli_bench_idle, "links left idle, then woken"},
    {"handshakes", cli_bench_handshakes, "links opened, used once and closed, one after another"},
};

int cli_bench(int argc, char **argv)
{
    if (argc == 1 ||
        (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))) {
        fputs(bench_help, stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
        if (strcmp(argv[1], benches[i].name) == 0)
            return benches[i].run(argc - 1, argv + 1);
    return cli_usage(
        "bench",
        "no benchmark '%s': try `pure bench idle`, `pure bench handshakes` or bench/run.py",
        argv[1]);
}

/* bench.c: `pure bench`: the entry for Pure's benchmarks. The comparison runner is
 * bench/run.py; in-process benchmarks (transport, idle) are to be added here. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char bench_help[] =
    "usage: pure bench [--help]\n"
    "\n"
    "Pure's benchmarks are run by bench/run.py, which builds Pure and its peers\n"
    "(ngtcp2, quinn, TCP+TLS, raw UDP) and runs the same drain through each:\n"
    "  python3 bench/run.py drain            # see bench/README.md\n"
    "It drives this program as `pure serve --ephemeral --listen 127.0.0.1:0 --services drain`\n"
    "and `pure drain 127.0.0.1:PORT N SIZE --peer-key KEY`. For one quick measurement,\n"
    "run scripts/drain_demo.sh.\n"
    "\n"
    "No benchmark runs inside pure itself yet: `pure bench transport` and `pure bench idle`\n"
    "are planned.\n"
    "\n"
    "exit codes: 0 this help; 2 any argument (no benchmark of that name)\n";

int cli_bench(int argc, char **argv)
{
    if (argc == 1 || (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))) {
        fputs(bench_help, stdout);
        return CLI_OK;
    }
    return cli_usage("bench", "no benchmark '%s' in this build: use bench/run.py", argv[1]);
}

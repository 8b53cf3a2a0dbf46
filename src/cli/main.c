/* SPDX-License-Identifier: MIT */
/* main.c: the `pure` command: a table of subcommands, each with its own --help. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const cli_cmd commands[] = {
    {"keygen", cli_keygen, "print a new private key (pure-priv:...)"},
    {"pubkey", cli_pubkey, "read a private key on stdin, print its public key"},
    {"serve", cli_serve, "accept links for the drain, echo and sink services"},
    {"drain", cli_drain, "send N messages to a drain service and check its count"},
    {"ping", cli_ping, "time N round trips of one message through an echo service"},
    {"send", cli_send, "send each stdin line as a message, print the replies"},
    {"bench", cli_bench, "benchmarks (see bench/run.py)"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pure COMMAND [ARGS]   (pure COMMAND --help for each)\n"
            "       pure --version        print the version (pure %s)\n\n"
            "Pure: a secure, reliable message transport over UDP.\n\ncommands:\n",
            pure_version());
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nexit codes: 0 ok; 1 runtime failure (count mismatch, link error, timeout);\n"
               "            2 usage error (bad flag, address, key text or file);\n"
               "            3 refused (unknown service, key not allowed, wrong peer key);\n"
               "            130 / 143 a client stopped by SIGINT / SIGTERM before done\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("pure %s\n", pure_version());
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "pure: unknown command '%s'\n", name);
    usage(stderr);
    return CLI_USAGE;
}

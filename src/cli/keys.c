/* SPDX-License-Identifier: MIT */
/* keys.c: `pure keygen` (a new private key) and `pure pubkey` (a private key's public key). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char keygen_help[] =
    "usage: pure keygen\n"
    "\n"
    "Prints a new X25519 private key as one line of base64 (44 characters).\n"
    "Keep it secret: store it in a file only you can read, e.g.\n"
    "  umask 077; pure keygen > server.key\n"
    "and give pure serve/drain/send --key server.key. pure pubkey prints its public key.\n"
    "\n"
    "exit codes: 0 ok; 1 no randomness available; 2 usage error\n";

static const char pubkey_help[] =
    "usage: pure pubkey < PRIVATE_KEY\n"
    "\n"
    "Reads a private key (base64, as printed by pure keygen) on stdin and prints its\n"
    "public key (base64): the text peers pass as --peer-key, or list in an --allow file.\n"
    "\n"
    "exit codes: 0 ok; 2 usage error or stdin is not a private key\n";

/* Both commands take no arguments besides --help. Returns -1 to go on, else an exit code. */
static int no_args(const char *cmd, const char *help, int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(help, stdout);
        return CLI_OK;
    }
    if (argc > 1)
        return argv[1][0] == '-' ? cli_usage(cmd, "unknown option %s", argv[1])
                                 : cli_usage(cmd, "takes no arguments (got '%s')", argv[1]);
    return -1;
}

int cli_keygen(int argc, char **argv)
{
    int rc = no_args("keygen", keygen_help, argc, argv);
    if (rc >= 0)
        return rc;
    uint8_t priv[PURE_KEY_LEN];
    char text[45];
    if (pure_keygen(priv) != 0) {
        fprintf(stderr, "pure keygen: no randomness available from the operating system\n");
        return CLI_FAIL;
    }
    pure_key_to_base64(text, priv);
    memset(priv, 0, sizeof priv);
    printf("%s\n", text);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}

int cli_pubkey(int argc, char **argv)
{
    int rc = no_args("pubkey", pubkey_help, argc, argv);
    if (rc >= 0)
        return rc;
    char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, stdin);
    int big = !feof(stdin);
    buf[n] = 0;
    uint8_t priv[PURE_KEY_LEN], pub[PURE_KEY_LEN];
    if (big || pure_key_from_base64(priv, buf) != 0) {
        fprintf(stderr, "pure pubkey: stdin is not a private key: expected one line of 44 base64 "
                        "characters, as printed by pure keygen\n");
        return CLI_USAGE;
    }
    if (pure_public_key(pub, priv) != 0) {
        fprintf(stderr, "pure pubkey: could not compute the public key\n");
        return CLI_FAIL;
    }
    memset(priv, 0, sizeof priv);
    char text[45];
    pure_key_to_base64(text, pub);
    printf("%s\n", text);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}

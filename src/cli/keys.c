/* SPDX-License-Identifier: MIT */
/* keys.c: `pure keygen` (a new private key) and `pure pubkey` (a private key's public key). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli.h"

static const char keygen_help[] =
    "usage: pure keygen\n"
    "\n"
    "Prints a new X25519 private key as one line: pure-priv: and 44 characters of base64\n"
    "(the prefix keeps it from being taken for a public key, which pure pubkey prints as\n"
    "pure-pub:...). Keep it secret: when stdout is a file, keygen makes it readable by its\n"
    "owner only (mode 0600), e.g.\n"
    "  pure keygen > server.key\n"
    "and give pure serve/drain/send --key server.key. pure pubkey prints its public key.\n"
    "\n"
    "exit codes: 0 ok; 1 no randomness available; 2 usage error\n";

static const char pubkey_help[] =
    "usage: pure pubkey < PRIVATE_KEY\n"
    "\n"
    "Reads a private key (pure-priv:..., as printed by pure keygen) on stdin and prints its\n"
    "public key (pure-pub:...): the text peers pass as --peer-key, or list in an --allow file.\n"
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
    char text[CLI_KEY_TEXT];
    if (pure_keygen(priv) != 0) {
        fprintf(stderr, "pure keygen: no randomness available from the operating system\n");
        return CLI_FAIL;
    }
    /* a key file only its owner can read: ssh-keygen's habit, and what pure serve checks */
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) &&
        fchmod(STDOUT_FILENO, st.st_mode & 0700) != 0)
        fprintf(stderr,
                "pure keygen: warning: cannot make the key file private (chmod 600 it): "
                "%s\n",
                strerror(errno));
    cli_key_text(text, priv, 1);
    memset(priv, 0, sizeof priv);
    printf("%s\n", text);
    memset(text, 0, sizeof text);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}

int cli_pubkey(int argc, char **argv)
{
    int rc = no_args("pubkey", pubkey_help, argc, argv);
    if (rc >= 0)
        return rc;
    char buf[256];
    int big = cli_read_small(stdin, buf, sizeof buf);
    uint8_t priv[PURE_KEY_LEN], pub[PURE_KEY_LEN];
    if (big < 0) {
        memset(buf, 0, sizeof buf);
        fprintf(stderr, "pure pubkey: cannot read stdin: %s\n", strerror(-big));
        return CLI_USAGE;
    }
    if (big) {
        fprintf(stderr, "pure pubkey: stdin is not a private key: more than one key's text\n");
        return CLI_USAGE;
    }
    rc = cli_read_private_key("pubkey", "stdin", buf, priv);
    memset(buf, 0, sizeof buf);
    if (rc)
        return rc;
    if (pure_public_key(pub, priv) != 0) {
        fprintf(stderr, "pure pubkey: could not compute the public key\n");
        return CLI_FAIL;
    }
    memset(priv, 0, sizeof priv);
    char text[CLI_KEY_TEXT];
    cli_key_text(text, pub, 0);
    printf("%s\n", text);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}

/* SPDX-License-Identifier: MIT */
/* tls_setup is the TLS 1.3 configuration every TCP + TLS peer program shares (tls.c, the drain,
 * latency and handshakes peer; rpc.c, the RPC workload): TLS 1.3 only, TLS_AES_128_GCM_SHA256
 * only, X25519 only, a self-signed P-256 certificate made in memory and pinned by the client by
 * its SHA-256 instead of verified.
 */
#ifndef PEER_TLS_SETUP_H
#define PEER_TLS_SETUP_H

#include <openssl/ssl.h>

#define SUITE "TLS_AES_128_GCM_SHA256"

/* Prints "tls: WHAT failed: <OpenSSL's queued errors>" on stderr and empties the queue. */
void tls_ssl_errors(const char *what);

/* A context for one side (server != 0: the accepting side) set to the suite and group above,
 * SSL_MODE_AUTO_RETRY. NULL (errors printed) on failure. */
SSL_CTX *tls_ctx_new(int server);

/* Makes a self-signed P-256 certificate and installs it with its key in ctx; writes the
 * certificate's SHA-256 as 64 hex digits and a NUL to hex_out. 0, or -1 (errors printed). */
int tls_make_cert(SSL_CTX *ctx, char hex_out[65]);

/* 0 if the peer's certificate has SHA-256 `want` (64 hex digits), else -1 (reason printed). */
int tls_check_fingerprint(SSL *ssl, const char *want);

/* A client context (NULL for plain TCP) that verifies nothing (the certificate is pinned by
 * tls_check_fingerprint instead) and caches no session, so every handshake is a full one. NULL
 * with errors printed when plain is 0 and it could not be made. */
SSL_CTX *tls_client_ctx(int plain);

#endif

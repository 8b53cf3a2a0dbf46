/* SPDX-License-Identifier: MIT */
/* tls_setup.c: the shared TLS 1.3 configuration (tls_setup.h). */
#include "tls_setup.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

void tls_ssl_errors(const char *what)
{
    fprintf(stderr, "tls: %s failed", what);
    unsigned long e;
    char buf[256];
    while ((e = ERR_get_error()) != 0) {
        ERR_error_string_n(e, buf, sizeof buf);
        fprintf(stderr, ": %s", buf);
    }
    fputc('\n', stderr);
}

SSL_CTX *tls_ctx_new(int server)
{
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!ctx) {
        tls_ssl_errors("SSL_CTX_new");
        return NULL;
    }
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_ciphersuites(ctx, SUITE) || !SSL_CTX_set1_groups_list(ctx, "X25519")) {
        tls_ssl_errors("configuring TLS 1.3 with " SUITE " and X25519");
        SSL_CTX_free(ctx);
        return NULL;
    }
    /* Read-ahead: done by each program's own socket BIO (tls.c says why not by
     * SSL_CTX_set_read_ahead). */
    (void)server;
    SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
    return ctx;
}

/* Self-signed P-256 certificate, made in memory; its SHA-256 goes to hex_out. */
int tls_make_cert(SSL_CTX *ctx, char hex_out[65])
{
    int ok = 0;
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!pkey || !x) {
        tls_ssl_errors("generating the certificate key");
        goto out;
    }
    unsigned char serial[8];
    if (RAND_bytes(serial, sizeof serial) != 1) {
        tls_ssl_errors("RAND_bytes");
        goto out;
    }
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    X509_NAME *name = X509_get_subject_name(x);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) || !X509_set_version(x, 2) ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), 7L * 86400) || !X509_set_pubkey(x, pkey) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost",
                                    -1, -1, 0) ||
        !X509_set_issuer_name(x, name) || !X509_sign(x, pkey, EVP_sha256())) {
        BN_free(bn);
        tls_ssl_errors("building the self-signed certificate");
        goto out;
    }
    BN_free(bn);
    if (!SSL_CTX_use_certificate(ctx, x) || !SSL_CTX_use_PrivateKey(ctx, pkey) ||
        !SSL_CTX_check_private_key(ctx)) {
        tls_ssl_errors("installing the certificate");
        goto out;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!X509_digest(x, EVP_sha256(), md, &mdlen) || mdlen != 32) {
        tls_ssl_errors("X509_digest");
        goto out;
    }
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex_out + 2 * i, 3, "%02x", md[i]);
    ok = 1;
out:
    X509_free(x);
    EVP_PKEY_free(pkey);
    return ok ? 0 : -1;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int tls_check_fingerprint(SSL *ssl, const char *want)
{
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (!peer) {
        fprintf(stderr, "tls: server sent no certificate\n");
        return -1;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    int ok = X509_digest(peer, EVP_sha256(), md, &mdlen) && mdlen == 32;
    X509_free(peer);
    if (!ok) {
        tls_ssl_errors("X509_digest");
        return -1;
    }
    for (unsigned i = 0; i < 32; i++) {
        int hi = hexval(want[2 * i]), lo = hi < 0 ? -1 : hexval(want[2 * i + 1]);
        if (hi < 0 || lo < 0 || (unsigned char)(hi << 4 | lo) != md[i]) {
            fprintf(stderr, "tls: server certificate SHA-256 does not match --cert-sha256\n");
            return -1;
        }
    }
    return 0;
}

SSL_CTX *tls_client_ctx(int plain)
{
    if (plain)
        return NULL;
    SSL_CTX *ctx = tls_ctx_new(0);
    if (!ctx)
        return NULL;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE,
                       NULL); /* self-signed: pinned by --cert-sha256 instead */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); /* every handshake a full one */
    return ctx;
}

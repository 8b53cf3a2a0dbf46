/* SPDX-License-Identifier: MIT */
/* ctx_test.c: the context's public API: settings validation (every limit, just inside and just
 * outside), pure_strerror and pure_err_is_fatal for every code, base64 keys (round trips, known
 * text, white space, and rejection of every kind of bad text), the service and allow lists as a
 * responder applies them to real handshakes, and pure_ctx_read of junk: never a crash, always a
 * documented code, always counted. Runs on the null crypto backend (no OpenSSL needed) except
 * where a test says otherwise. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "pure.h"
#include "test.h"
#include "wire.h"

static void base_settings(pure_settings *s)
{
    pure_settings_default(s);
    memset(s->private_key, 0x42, PURE_KEY_LEN);
    s->crypto = &pure_crypto_null;
}

static int try_new(const pure_settings *s)
{
    pure_ctx *ctx = NULL;
    int rc = pure_ctx_new(s, &ctx);
    if (rc == 0) {
        if (!ctx)
            return -1000;
        pure_ctx_free(ctx);
    }
    return rc;
}

/* ---- settings ---- */

static void *my_alloc(void *u, size_t n)
{
    (*(long *)u)++;
    return malloc(n);
}

static void my_free(void *u, void *p, size_t n)
{
    (void)n;
    (*(long *)u)--;
    free(p);
}

static void *my_realloc(void *u, void *p, size_t old, size_t n)
{
    (void)u;
    (void)old;
    return realloc(p, n);
}

static void test_settings_defaults(void)
{
    pure_settings s;
    pure_settings_default(&s);
    CHECK_EQ(s.version, PURE_SETTINGS_VERSION);
    CHECK_EQ(s.max_udp_payload, 1472);
    CHECK_EQ(s.max_message_size, 16u << 20);
    CHECK_EQ(s.send_backlog, 8u << 20);
    CHECK_EQ(s.recv_window, 1u << 20);
    CHECK_EQ(s.recv_window_max, 16u << 20);
    CHECK_EQ(s.congestion, PURE_CC_CUBIC);
    CHECK_EQ(s.allow_any, 0);
    CHECK_EQ(s.max_receive_memory, 256u << 20);
    CHECK_EQ(s.max_failed_opens, 1ull << 36);
    CHECK_EQ(s.rekey_after_packets, 1ull << 23); /* AES-128-GCM's confidentiality limit */
    CHECK_EQ(PURE_REKEY_MAX_PACKETS, 1ull << 23);
    CHECK_EQ(s.respond_to_unknown, 1);
    CHECK_EQ(s.max_half_open, 16384);
    CHECK_EQ(s.half_open_per_addr, 64);
    CHECK_EQ(s.inits_per_addr, 32);
    CHECK(s.realtime == NULL);
    /* a caller built against settings version 2 has no version-3 fields: they are not read */
    {
        pure_settings v2;
        base_settings(&v2);
        v2.version = 2;
        memset((char *)&v2 + offsetof(pure_settings, max_receive_memory), 0,
               sizeof v2 - offsetof(pure_settings, max_receive_memory));
        CHECK_EQ(try_new(&v2), 0);
        /* its old default of 2^32 packets per key is taken as the limit, not refused */
        v2.rekey_after_packets = 1ull << 32;
        CHECK_EQ(try_new(&v2), 0);
        v2.version = 3;
        CHECK_EQ(try_new(&v2), PURE_EINVAL); /* zero limits are invalid when they are read */
    }
    /* the defaults alone lack a key */
    s.crypto = &pure_crypto_null;
    CHECK_EQ(try_new(&s), PURE_EINVAL);
    base_settings(&s);
    CHECK_EQ(try_new(&s), 0);
    /* the real backend too (OpenSSL) */
    s.crypto = NULL;
    CHECK_EQ(try_new(&s), 0);
}

static void test_settings_validation(void)
{
    pure_settings s;
    pure_ctx *ctx = NULL;
    base_settings(&s);
    CHECK_EQ(pure_ctx_new(NULL, &ctx), PURE_EINVAL);
    CHECK_EQ(pure_ctx_new(&s, NULL), PURE_EINVAL);

#define EXPECT(field, value, rc)                                                                   \
    do {                                                                                           \
        base_settings(&s);                                                                         \
        s.field = value;                                                                           \
        CHECK_EQ(try_new(&s), rc);                                                                 \
    } while (0)
    EXPECT(version, 0, PURE_EINVAL);
    EXPECT(version, PURE_SETTINGS_VERSION + 1, PURE_EINVAL);
    EXPECT(max_udp_payload, PURE_MIN_UDP_PAYLOAD - 1, PURE_EINVAL);
    EXPECT(max_udp_payload, PURE_MIN_UDP_PAYLOAD, 0);
    EXPECT(max_udp_payload, PURE_MAX_UDP_PAYLOAD, 0);
    EXPECT(max_udp_payload, PURE_MAX_UDP_PAYLOAD + 1, PURE_EINVAL);
    EXPECT(max_message_size, 0, PURE_EINVAL);
    EXPECT(max_message_size, 1, 0);
    /* a message must fit the receive memory budget (default 256 MiB) */
    EXPECT(max_message_size, 256u << 20, 0);
    EXPECT(max_message_size, (256u << 20) + 1, PURE_EINVAL);
    base_settings(&s);
    s.max_message_size = 1u << 30;
    s.max_receive_memory = 1u << 30;
    CHECK_EQ(try_new(&s), 0);
    EXPECT(max_receive_memory, (16u << 20) - 1, PURE_EINVAL); /* below max_message_size */
    EXPECT(max_failed_opens, 0, PURE_EINVAL);
    EXPECT(max_failed_opens, 1, 0);
    EXPECT(max_failed_opens, UINT64_MAX, 0); /* counted in 32 bits: acts as 2^32 - 1 */
    /* packets per key: at most the AEAD's confidentiality limit */
    EXPECT(rekey_after_packets, 0, PURE_EINVAL);
    EXPECT(rekey_after_packets, PURE_REKEY_MIN_PACKETS - 1, PURE_EINVAL);
    EXPECT(rekey_after_packets, PURE_REKEY_MIN_PACKETS, 0);
    EXPECT(rekey_after_packets, 1ull << 23, 0);
    EXPECT(rekey_after_packets, (1ull << 23) + 1, PURE_EINVAL);
    EXPECT(rekey_after_packets, 1ull << 32, PURE_EINVAL); /* the old default */
    EXPECT(max_half_open, 0, PURE_EINVAL);
    EXPECT(half_open_per_addr, 0, PURE_EINVAL);
    EXPECT(inits_per_addr, 0, PURE_EINVAL);
    base_settings(&s);
    s.max_message_size = (1u << 30) + 1;
    s.max_receive_memory = 2u << 30;
    CHECK_EQ(try_new(&s), PURE_EINVAL);
    EXPECT(send_backlog, 4095, PURE_EINVAL);
    EXPECT(send_backlog, 4096, 0);
    EXPECT(recv_window, 4095, PURE_EINVAL);
    EXPECT(recv_window, 4096, 0);
    EXPECT(recv_window_max, (1u << 20) - 1, PURE_EINVAL); /* below recv_window */
    EXPECT(recv_window_max, 1u << 20, 0);
    EXPECT(recv_window_max, 1ull << 32, 0);
    EXPECT(recv_window_max, (1ull << 32) + 1, PURE_EINVAL);
    EXPECT(max_links, 0, PURE_EINVAL);
    EXPECT(max_links, 1, 0);
    EXPECT(ack_every, 0, PURE_EINVAL);
    EXPECT(ack_every, 1, 0);
    /* times: deadlines are a time plus these, so "never" (UINT64_MAX) is refused, not wrapped */
    EXPECT(idle_timeout, PURE_TIMEOUT_MAX, 0);
    EXPECT(idle_timeout, PURE_TIMEOUT_MAX + 1, PURE_EINVAL);
    EXPECT(idle_timeout, UINT64_MAX, PURE_EINVAL);
    EXPECT(keepalive, PURE_TIMEOUT_MAX, 0);
    EXPECT(keepalive, UINT64_MAX, PURE_EINVAL);
    EXPECT(handshake_timeout, PURE_TIMEOUT_MAX, 0);
    EXPECT(handshake_timeout, UINT64_MAX, PURE_EINVAL);
    EXPECT(rekey_after_time, PURE_TIMEOUT_MAX, 0);
    EXPECT(rekey_after_time, UINT64_MAX, PURE_EINVAL);
    EXPECT(max_ack_delay, 0, 0);
    EXPECT(max_ack_delay, PURE_MAX_ACK_DELAY_MAX, 0);
    EXPECT(max_ack_delay, PURE_MAX_ACK_DELAY_MAX + 1, PURE_EINVAL);
    EXPECT(congestion, 0, PURE_EINVAL);
    EXPECT(congestion, 3, PURE_EINVAL);
    EXPECT(congestion, PURE_CC_NEWRENO, 0);
#undef EXPECT
    /* an all-zero private key is no key */
    base_settings(&s);
    memset(s.private_key, 0, PURE_KEY_LEN);
    CHECK_EQ(try_new(&s), PURE_EINVAL);
    s.private_key[31] = 1;
    CHECK_EQ(try_new(&s), 0);
    /* an allocator needs both halves; with both, every byte goes through it */
    long live = 0;
    base_settings(&s);
    s.alloc = my_alloc;
    s.alloc_user = &live;
    CHECK_EQ(try_new(&s), PURE_EINVAL);
    s.alloc = NULL;
    s.free = my_free;
    CHECK_EQ(try_new(&s), PURE_EINVAL);
    s.alloc = my_alloc;
    /* a realloc only with the alloc/free it belongs to */
    base_settings(&s);
    s.realloc = my_realloc;
    CHECK_EQ(try_new(&s), PURE_EINVAL);
    s.alloc = my_alloc;
    s.free = my_free;
    s.alloc_user = &live;
    CHECK_EQ(try_new(&s), 0);
    CHECK_EQ(live, 0);
    s.realloc = NULL;
    CHECK_EQ(pure_ctx_new(&s, &ctx), 0);
    CHECK(live > 0);
    CHECK_EQ(pure_ctx_add_service(ctx, "pure"), 0);
    pure_ctx_free(ctx);
    CHECK_EQ(live, 0);
    pure_ctx_free(NULL); /* harmless */
}

static void test_public_key(void)
{
    pure_settings s;
    base_settings(&s);
    s.crypto = NULL; /* OpenSSL: the public key is X25519 of the private key */
    pure_ctx *ctx = NULL;
    CHECK_EQ(pure_ctx_new(&s, &ctx), 0);
    uint8_t pub[PURE_KEY_LEN];
    CHECK_EQ(pure_public_key(pub, s.private_key), 0);
    CHECK(memcmp(pub, pure_ctx_public_key(ctx), PURE_KEY_LEN) == 0);
    pure_ctx_free(ctx);
    uint8_t a[PURE_KEY_LEN], b[PURE_KEY_LEN];
    CHECK_EQ(pure_keygen(a), 0);
    CHECK_EQ(pure_keygen(b), 0);
    CHECK(memcmp(a, b, PURE_KEY_LEN) != 0);
    CHECK((a[0] & 7) == 0 && (a[31] & 0xc0) == 0x40); /* clamped */
}

/* ---- errors ---- */

static void test_strerror(void)
{
    static const int codes[] = {
        PURE_OK,       PURE_EINVAL,    PURE_ENOMEM,   PURE_EAGAIN,   PURE_ECRYPTO, PURE_EPROTO,
        PURE_ECLOSED,  PURE_ETIMEDOUT, PURE_EREFUSED, PURE_EACCES,   PURE_EKEY,    PURE_EMSGSIZE,
        PURE_ENOBUFS,  PURE_ELIMIT,    PURE_ESTATE,   PURE_EFLOW,    PURE_EIO,     PURE_ERESET,
        PURE_EUNREACH, PURE_ENOTPURE,  PURE_EMOVED,   PURE_EVERSION, PURE_EFULL,   PURE_EALREADY};
    const size_t n = sizeof codes / sizeof codes[0];
    CHECK_EQ(n, 24); /* 0 and -1 .. -23 */
    const char *unknown = pure_strerror(-1000);
    CHECK(unknown != NULL && strcmp(unknown, "unknown error") == 0);
    CHECK(strcmp(pure_strerror(1), "unknown error") == 0);
    CHECK(strcmp(pure_strerror(PURE_EALREADY - 1), "unknown error") == 0);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ(codes[i], -(int)i);
        const char *m = pure_strerror(codes[i]);
        CHECK(m != NULL && m[0] != 0);
        CHECK(strcmp(m, unknown) != 0);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(m, pure_strerror(codes[j])) != 0); /* each code names itself */
    }
    /* fatal: the link is gone (PURE_EPROTO is not: pure_ctx_read returns it for a dropped
     * datagram, and PURE_ECLOSED for one that ended its link) */
    static const int fatal[] = {PURE_ECLOSED,  PURE_ETIMEDOUT, PURE_EREFUSED, PURE_EACCES,
                                PURE_EKEY,     PURE_EFLOW,     PURE_ERESET,   PURE_EUNREACH,
                                PURE_ENOTPURE, PURE_EMOVED,    PURE_EVERSION};
    for (size_t i = 0; i < n; i++) {
        int want = 0;
        for (size_t j = 0; j < sizeof fatal / sizeof fatal[0]; j++)
            want |= codes[i] == fatal[j];
        CHECK_EQ(pure_err_is_fatal(codes[i]), want);
    }
}

/* ---- base64 keys ---- */

static void test_base64(void)
{
    uint8_t k[PURE_KEY_LEN], back[PURE_KEY_LEN];
    char text[45];
    for (int i = 0; i < PURE_KEY_LEN; i++)
        k[i] = (uint8_t)i;
    pure_key_to_base64(text, k);
    CHECK(strcmp(text, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=") == 0);
    CHECK_EQ(strlen(text), 44);
    memset(k, 0xff, sizeof k);
    pure_key_to_base64(text, k);
    CHECK(strcmp(text, "//////////////////////////////////////////8=") == 0);

    /* round trips over many keys, with the alphabet's every character in play */
    uint64_t x = 99;
    for (int t = 0; t < 500; t++) {
        for (int i = 0; i < PURE_KEY_LEN; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            k[i] = (uint8_t)(x >> 56);
        }
        if (t == 0)
            memset(k, 0, sizeof k);
        pure_key_to_base64(text, k);
        memset(back, 0xaa, sizeof back);
        CHECK_EQ(pure_key_from_base64(back, text), 0);
        CHECK(memcmp(k, back, PURE_KEY_LEN) == 0);
    }

    /* surrounding white space is allowed */
    const char *good = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    char buf[128];
    snprintf(buf, sizeof buf, " \t\r\n%s\n", good);
    CHECK_EQ(pure_key_from_base64(back, buf), 0);
    CHECK_EQ(back[31], 31);

    /* everything else is refused, and a refused parse leaves the key alone */
    static const char *bad[] = {
        "",
        "   ",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",      /* no padding */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8==",    /* too much padding */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh==",     /* 31 bytes */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8AAAA=", /* 35 bytes */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=",     /* leftover bits not zero */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8A",     /* a character where '=' belongs */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX GBkaGxwdHh8=",    /* space inside */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX-BkaGxwdHh8=",     /* not in the alphabet (URL-safe) */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX_BkaGxwdHh8=",
        "AAECAwQFBgcICQoL=A0ODxAREhMUFRYXGBkaGxwdHh8=",   /* padding in the middle */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=x",  /* trailing garbage */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= x", /* garbage after space */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\x80",
        ("\xc3\xa9"
         "AECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="), /* split: \xa9 then A */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(back, 0x5c, sizeof back);
        int rc = pure_key_from_base64(back, bad[i]);
        CHECK_EQ(rc, PURE_EINVAL);
        if (rc != PURE_EINVAL)
            fprintf(stderr, "  accepted bad base64 #%zu: \"%s\"\n", i, bad[i]);
        uint8_t same[PURE_KEY_LEN];
        memset(same, 0x5c, sizeof same);
        CHECK(memcmp(back, same, PURE_KEY_LEN) == 0);
    }
    CHECK_EQ(pure_key_from_base64(back, NULL), PURE_EINVAL);
}

/* ---- service and allow lists, through real (null-crypto) handshakes ---- */

typedef struct ep {
    pure_ctx *ctx;
    pure_addr addr;
    uint64_t rng;
    int established, closed, close_error, accepted;
    char accepted_service[64];
    pure_link *accepted_link;
} ep;

static int ep_random(void *user, uint8_t *buf, size_t len)
{
    uint64_t *s = user;
    for (size_t i = 0; i < len; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(*s >> 56);
    }
    return 0;
}

static int on_accept(pure_link *l, const char *service, const uint8_t key[PURE_KEY_LEN], void *u)
{
    (void)key;
    ep *e = u;
    e->accepted++;
    e->accepted_link = l;
    snprintf(e->accepted_service, sizeof e->accepted_service, "%s", service);
    pure_link_set_user(l, e);
    return 0;
}

static void on_established(pure_link *l, void *user)
{
    (void)l;
    ((ep *)user)->established++;
}

static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    (void)l;
    ep *e = user;
    e->closed++;
    e->close_error = info->error;
}

static const pure_callbacks CB = {
    .on_accept = on_accept, .on_established = on_established, .on_closed = on_closed};

static void ep_init(ep *e, uint8_t id, int allow_any)
{
    memset(e, 0, sizeof *e);
    pure_settings s;
    base_settings(&s);
    memset(s.private_key, id, PURE_KEY_LEN);
    s.allow_any = allow_any;
    s.callbacks = &CB;
    s.user = e;
    e->rng = id;
    s.random = ep_random;
    s.random_user = &e->rng;
    e->addr.len = 6;
    e->addr.bytes[3] = id;
    CHECK_EQ(pure_ctx_new(&s, &e->ctx), 0);
}

/* Moves datagrams both ways until neither side has anything to send. */
static void pump(ep *a, ep *b, uint64_t now)
{
    static uint8_t buf[65536];
    for (int round = 0; round < 20; round++) {
        int moved = 0;
        ep *side[2] = {a, b};
        for (int i = 0; i < 2; i++) {
            size_t seg;
            pure_addr to;
            int64_t n;
            while ((n = pure_ctx_write(side[i]->ctx, buf, sizeof buf, &seg, &to, now)) > 0) {
                for (int64_t off = 0; off < n; off += (int64_t)seg) {
                    size_t len = (size_t)(n - off) < seg ? (size_t)(n - off) : seg;
                    pure_ctx_read(side[1 - i]->ctx, &side[i]->addr, buf + off, len, now);
                }
                moved = 1;
            }
        }
        if (!moved)
            return;
    }
}

/* Connects a fresh initiator to r for `service`; returns the initiator's close error, or 1 if
 * the link was established. */
static int connect_to(ep *r, const char *service, uint8_t id, int allowed)
{
    ep i;
    ep_init(&i, id, 0);
    if (allowed)
        CHECK_EQ(pure_ctx_allow(r->ctx, pure_ctx_public_key(i.ctx)), 0);
    pure_link *l = NULL;
    CHECK_EQ(pure_connect(i.ctx, &r->addr, pure_ctx_public_key(r->ctx), service, &i, &l, 0), 0);
    pump(&i, r, 0);
    int result = i.established ? 1 : i.closed ? i.close_error : 0;
    pure_ctx_free(i.ctx);
    return result;
}

static void test_service_and_allow_list(void)
{
    ep r;
    ep_init(&r, 0x10, 0);
    /* names: 1..63 bytes */
    char name[80];
    memset(name, 's', sizeof name);
    name[PURE_SERVICE_MAX + 1] = 0;
    CHECK_EQ(pure_ctx_add_service(r.ctx, name), PURE_EINVAL);
    name[PURE_SERVICE_MAX] = 0;
    CHECK_EQ(pure_ctx_add_service(r.ctx, name), 0);
    CHECK_EQ(pure_ctx_add_service(r.ctx, ""), PURE_EINVAL);
    CHECK_EQ(pure_ctx_add_service(r.ctx, NULL), PURE_EINVAL);
    CHECK_EQ(pure_ctx_add_service(NULL, "x"), PURE_EINVAL);
    CHECK_EQ(pure_ctx_allow(r.ctx, NULL), PURE_EINVAL);
    CHECK_EQ(pure_ctx_allow(NULL, (const uint8_t *)name), PURE_EINVAL);
    /* more services than the first allocation holds; adding one twice is fine */
    for (int i = 0; i < 20; i++) {
        char n[16];
        snprintf(n, sizeof n, "svc%d", i);
        CHECK_EQ(pure_ctx_add_service(r.ctx, n), 0);
    }
    CHECK_EQ(pure_ctx_add_service(r.ctx, "svc3"), 0);

    /* an allowed key and a registered service: accepted, and the service named */
    CHECK_EQ(connect_to(&r, "svc17", 0x21, 1), 1);
    CHECK_EQ(r.accepted, 1);
    CHECK(strcmp(r.accepted_service, "svc17") == 0);
    CHECK_EQ(connect_to(&r, name, 0x22, 1), 1); /* the 63-byte name */
    CHECK(strcmp(r.accepted_service, name) == 0);
    /* an unregistered service: refused */
    CHECK_EQ(connect_to(&r, "svc99", 0x23, 1), PURE_EREFUSED);
    /* a service that is a prefix of a registered one is not that service */
    CHECK_EQ(connect_to(&r, "svc1", 0x24, 1), 1);
    CHECK_EQ(connect_to(&r, "svc", 0x25, 1), PURE_EREFUSED);
    /* a key not on the allow list: refused as access denied */
    CHECK_EQ(connect_to(&r, "svc1", 0x26, 0), PURE_EACCES);
    /* allowing a key twice is fine */
    ep tmp;
    ep_init(&tmp, 0x27, 0);
    CHECK_EQ(pure_ctx_allow(r.ctx, pure_ctx_public_key(tmp.ctx)), 0);
    CHECK_EQ(pure_ctx_allow(r.ctx, pure_ctx_public_key(tmp.ctx)), 0);
    pure_ctx_free(tmp.ctx);
    CHECK_EQ(connect_to(&r, "svc2", 0x27, 0), 1);
    pure_ctx_stats st;
    pure_ctx_stats_get(r.ctx, &st);
    CHECK_EQ(st.handshakes_refused, 3);
    CHECK_EQ(st.handshakes_accepted, 4);
    pure_ctx_free(r.ctx);

    /* allow_any: any key is accepted, but the service must still exist */
    ep any;
    ep_init(&any, 0x30, 1);
    CHECK_EQ(pure_ctx_add_service(any.ctx, "pure"), 0);
    CHECK_EQ(connect_to(&any, "pure", 0x31, 0), 1);
    CHECK_EQ(connect_to(&any, "other", 0x32, 0), PURE_EREFUSED);
    pure_ctx_free(any.ctx);

    /* no service at all: an INIT is dropped (nothing to offer), the initiator times out */
    ep none;
    ep_init(&none, 0x40, 1);
    CHECK_EQ(connect_to(&none, "pure", 0x41, 0), 0);
    pure_ctx_stats_get(none.ctx, &st);
    CHECK_EQ(st.links, 0);
    CHECK(st.dropped_malformed >= 1);
    pure_ctx_free(none.ctx);
}

/* ---- junk ---- */

static void test_read_junk_counted(void)
{
    ep r;
    ep_init(&r, 0x50, 1);
    CHECK_EQ(pure_ctx_add_service(r.ctx, "pure"), 0);
    /* a link exists, so DATA for its index reaches the AEAD */
    ep i;
    ep_init(&i, 0x51, 0);
    pure_link *l = NULL;
    CHECK_EQ(pure_connect(i.ctx, &r.addr, pure_ctx_public_key(r.ctx), "pure", &i, &l, 0), 0);
    pump(&i, &r, 0);
    CHECK_EQ(i.established, 1);

    CHECK_EQ(pure_ctx_read(NULL, &i.addr, (uint8_t *)"x", 1, 0), PURE_EINVAL);
    CHECK_EQ(pure_ctx_read(r.ctx, NULL, (uint8_t *)"x", 1, 0), PURE_EINVAL);
    CHECK_EQ(pure_ctx_read(r.ctx, &i.addr, NULL, 5, 0), PURE_EINVAL);

    pure_ctx_stats before, after;
    pure_ctx_stats_get(r.ctx, &before);
    uint64_t x = 7, sent = 0;
    int bad_code = 0, uncounted = 0;
    static uint8_t d[2048];
    static const uint8_t types[] = {
        0x00,           PURE_PKT_INIT,  PURE_PKT_RESP, PURE_PKT_COOKIE, PURE_PKT_REJECT, 0x05,
        PURE_PKT_DATA0, PURE_PKT_DATA1, 0xff};
    for (int t = 0; t < 4000; t++) {
        size_t n = (size_t)(t % 300);
        if (t % 97 == 0)
            n = 1200 + (size_t)t % 800;
        for (size_t k = 0; k < n; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            d[k] = (uint8_t)(x >> 56);
        }
        if (n)
            d[0] = types[(size_t)t % sizeof types];
        pure_ctx_stats s0, s1;
        pure_ctx_stats_get(r.ctx, &s0);
        int rc = pure_ctx_read(r.ctx, &i.addr, n ? d : NULL, n, (uint64_t)t * 1000);
        sent++;
        pure_ctx_stats_get(r.ctx, &s1);
        switch (rc) {
        case 0: /* INIT is always "used": answered or dropped, and counted either way */
            if (n && d[0] == PURE_PKT_INIT &&
                s1.dropped_malformed + s1.dropped_auth == s0.dropped_malformed + s0.dropped_auth)
                uncounted++;
            if (n && d[0] != PURE_PKT_INIT)
                bad_code++; /* random bytes never authenticate */
            break;
        case PURE_EPROTO: uncounted += s1.dropped_malformed == s0.dropped_malformed; break;
        case PURE_ECRYPTO: uncounted += s1.dropped_auth == s0.dropped_auth; break;
        case PURE_EINVAL:
            uncounted += s1.dropped_unknown_link == s0.dropped_unknown_link &&
                         s1.dropped_replay == s0.dropped_replay;
            break;
        default: bad_code++;
        }
    }
    CHECK_EQ(bad_code, 0);
    CHECK_EQ(uncounted, 0);
    pure_ctx_stats_get(r.ctx, &after);
    CHECK_EQ(after.datagrams_in - before.datagrams_in, sent);
    CHECK(after.dropped_malformed > before.dropped_malformed);
    CHECK(after.dropped_auth > before.dropped_auth);
    CHECK(after.dropped_unknown_link > before.dropped_unknown_link);
    CHECK_EQ(after.handshakes_accepted, before.handshakes_accepted);

    CHECK_EQ(pure_ctx_read(r.ctx, &i.addr, d, 0, 0), PURE_EPROTO); /* empty */
    /* the genuine link still works after all that junk */
    CHECK(pure_link_send(l, "hi", 2) >= 0);
    pump(&i, &r, 5000000);
    pure_ctx_stats_get(r.ctx, &after);
    CHECK_EQ(after.links, 1);
    pure_ctx_free(i.ctx);
    pure_ctx_free(r.ctx);
}

/* One datagram from i to r (the first of i's next burst); returns what pure_ctx_read did. */
static int one_datagram(ep *i, ep *r, uint64_t now)
{
    static uint8_t buf[65536];
    size_t seg;
    pure_addr to;
    int64_t n = pure_ctx_write(i->ctx, buf, sizeof buf, &seg, &to, now);
    CHECK(n > 0);
    if (n <= 0)
        return PURE_EINVAL;
    return pure_ctx_read(r->ctx, &i->addr, buf, (size_t)n < seg ? (size_t)n : seg, now);
}

/* A datagram's effect on its link's timer is refiled once for a batch of datagrams
 * (pure_timers_defer), not once each; pure_ctx_deadline must still answer with it at once, and a
 * link closed before anything read the heap must not be refiled after it was freed (ASan): one
 * that was closing already and hears the peer's CLOSE; one that answers the peer's CLOSE is
 * freed once its answer is written. */
static void test_deadline_after_read(void)
{
    ep r, i;
    ep_init(&r, 0x70, 1);
    ep_init(&i, 0x71, 0);
    CHECK_EQ(pure_ctx_add_service(r.ctx, "svc"), 0);
    pure_link *l = NULL;
    CHECK_EQ(pure_connect(i.ctx, &r.addr, pure_ctx_public_key(r.ctx), "svc", &i, &l, 0), 0);
    pump(&i, &r, 0);
    CHECK_EQ(i.established, 1);
    CHECK(r.accepted_link != NULL);
    pure_settings s;
    base_settings(&s);
    uint64_t now = 1000000;
    uint64_t idle = pure_ctx_deadline(r.ctx);
    CHECK(idle > now + s.max_ack_delay);
    /* a message arrives: its ACK is due max_ack_delay later, and the deadline says so */
    CHECK(pure_link_send(l, "hello", 5) >= 0);
    CHECK_EQ(one_datagram(&i, &r, now), 0);
    CHECK_EQ(pure_ctx_deadline(r.ctx), now + s.max_ack_delay);
    /* another, then the peer's CLOSE ends r's link (freed at the end of that read) before
     * anything asks for the deadline */
    CHECK(pure_link_send(l, "again", 5) >= 0);
    CHECK_EQ(one_datagram(&i, &r, now + 1000), 0);
    CHECK_EQ(pure_link_abort(l, 0, "done"), 0);
    CHECK_EQ(one_datagram(&i, &r, now + 2000), PURE_ECLOSED);
    CHECK_EQ(r.closed, 1);
    CHECK_EQ(pure_ctx_deadline(r.ctx), now + 2000); /* its answer is due */
    CHECK_EQ(one_datagram(&r, &i, now + 2000), 0);  /* written; it ends i's closing period */
    pure_ctx_timeout(r.ctx, now + 2000);
    CHECK_EQ(pure_ctx_deadline(r.ctx), UINT64_MAX); /* nothing is left */
    pure_ctx_stats st;
    pure_ctx_stats_get(i.ctx, &st);
    CHECK_EQ(st.links, 0);
    /* a second link: r closes first (its CLOSE does not reach i), then i's CLOSE ends r's link
     * in the read */
    r.accepted_link = NULL;
    CHECK_EQ(pure_connect(i.ctx, &r.addr, pure_ctx_public_key(r.ctx), "svc", &i, &l, 0), 0);
    pump(&i, &r, now + 3000);
    CHECK(r.accepted_link != NULL);
    CHECK(pure_link_send(l, "hello", 5) >= 0);
    CHECK_EQ(one_datagram(&i, &r, now + 4000), 0);
    CHECK_EQ(pure_link_abort(r.accepted_link, 0, "first"), 0);
    CHECK_EQ(pure_link_abort(l, 0, "second"), 0);
    CHECK_EQ(one_datagram(&i, &r, now + 5000), 0); /* r had heard on_closed already */
    CHECK_EQ(r.closed, 2);
    CHECK_EQ(pure_ctx_deadline(r.ctx), UINT64_MAX);
    pure_ctx_free(i.ctx);
    pure_ctx_free(r.ctx);
}

static void test_write_buffer_too_small(void)
{
    ep r;
    ep_init(&r, 0x60, 1);
    uint8_t buf[1500];
    size_t seg;
    pure_addr to;
    CHECK_EQ(pure_ctx_write(r.ctx, buf, 1471, &seg, &to, 0), PURE_ENOBUFS);
    CHECK_EQ(pure_ctx_write(r.ctx, buf, 1472, &seg, &to, 0), 0); /* nothing to send */
    CHECK_EQ(pure_ctx_write(r.ctx, NULL, 1472, &seg, &to, 0), PURE_EINVAL);
    CHECK(pure_ctx_deadline(r.ctx) == UINT64_MAX); /* an empty context arms no timer */
    pure_ctx_free(r.ctx);
}

int main(void)
{
    RUN(test_settings_defaults);
    RUN(test_settings_validation);
    RUN(test_public_key);
    RUN(test_strerror);
    RUN(test_base64);
    RUN(test_service_and_allow_list);
    RUN(test_read_junk_counted);
    RUN(test_deadline_after_read);
    RUN(test_write_buffer_too_small);
    return pure_test_finish();
}

/* SPDX-License-Identifier: MIT */
/* cookie_test.c: DoS cookies: valid for the same address for 120-240 s, never for another. */
#include <string.h>

#include "cookie.h"
#include "crypto.h"
#include "pure.h"
#include "test.h"

#define SEC 1000000000ull

static const uint8_t addr1[] = {4, 127, 0, 0, 1, 0x1f, 0x90};
static const uint8_t addr2[] = {4, 127, 0, 0, 1, 0x1f, 0x91};

static void test_same_address_accepted(void)
{
    pure_cookie_jar j;
    uint8_t ck[16];
    uint64_t t0 = 1000 * SEC;
    CHECK_EQ(pure_cookie_init(&j, &pure_crypto_openssl, t0), 0);
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_openssl, t0, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, t0 + SEC, addr1, sizeof(addr1), ck), 0);
    /* The same address later in the same epoch gets the same cookie (stateless: recomputed). */
    {
        uint8_t again[16];
        CHECK_EQ(
            pure_cookie_make(&j, &pure_crypto_openssl, t0 + 2 * SEC, addr1, sizeof(addr1), again),
            0);
        CHECK(memcmp(ck, again, 16) == 0);
    }
}

static void test_other_address_and_forgery_rejected(void)
{
    pure_cookie_jar j;
    uint8_t ck[16], other[16];
    CHECK_EQ(pure_cookie_init(&j, &pure_crypto_openssl, 0), 0);
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_openssl, 0, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_openssl, 0, addr2, sizeof(addr2), other), 0);
    CHECK(memcmp(ck, other, 16) != 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 0, addr2, sizeof(addr2), ck),
             PURE_ECRYPTO);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 0, addr1, sizeof(addr1) - 1, ck),
             PURE_ECRYPTO);
    for (int bit = 0; bit < 128; bit++) {
        ck[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 0, addr1, sizeof(addr1), ck),
                 PURE_ECRYPTO);
        ck[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 0, addr1, sizeof(addr1), ck), 0);
}

static void test_expiry(void)
{
    pure_cookie_jar j;
    uint8_t ck[16];
    uint64_t p = PURE_COOKIE_PERIOD_NS;
    /* Made at the very start of an epoch: valid through the end of the next one, not after. */
    CHECK_EQ(pure_cookie_init(&j, &pure_crypto_openssl, 10 * p), 0);
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_openssl, 10 * p, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 11 * p - 1, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 11 * p, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 12 * p - 1, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 12 * p, addr1, sizeof(addr1), ck),
             PURE_ECRYPTO);
    /* A fresh cookie works again, and a long silence (several epochs) drops both secrets. */
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_openssl, 12 * p, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 12 * p + SEC, addr1, sizeof(addr1), ck),
             0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 15 * p, addr1, sizeof(addr1), ck),
             PURE_ECRYPTO);
    /* A clock that steps back does not resurrect or break anything. */
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_openssl, 15 * p, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_openssl, 14 * p, addr1, sizeof(addr1), ck), 0);
}

static void test_secrets_differ_between_jars(void)
{
    pure_cookie_jar a, b;
    uint8_t ck[16];
    CHECK_EQ(pure_cookie_init(&a, &pure_crypto_openssl, 0), 0);
    CHECK_EQ(pure_cookie_init(&b, &pure_crypto_openssl, 0), 0);
    CHECK_EQ(pure_cookie_make(&a, &pure_crypto_openssl, 0, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&b, &pure_crypto_openssl, 0, addr1, sizeof(addr1), ck),
             PURE_ECRYPTO);
}

static void test_null_backend_and_bad_args(void)
{
    pure_cookie_jar j;
    uint8_t ck[16];
    memset(&j, 0, sizeof(j));
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_null, 0, addr1, sizeof(addr1), ck), PURE_EINVAL);
    CHECK_EQ(pure_cookie_init(NULL, &pure_crypto_null, 0), PURE_EINVAL);
    pure_crypto_null_seed(5);
    CHECK_EQ(pure_cookie_init(&j, &pure_crypto_null, 0), 0);
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_null, 0, NULL, 3, ck), PURE_EINVAL);
    CHECK_EQ(pure_cookie_make(&j, &pure_crypto_null, 0, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_null, 0, addr1, sizeof(addr1), ck), 0);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_null, 0, addr2, sizeof(addr2), ck), PURE_ECRYPTO);
    pure_cookie_wipe(&j);
    CHECK_EQ(pure_cookie_verify(&j, &pure_crypto_null, 0, addr1, sizeof(addr1), ck), PURE_EINVAL);
}

int main(void)
{
    RUN(test_same_address_accepted);
    RUN(test_other_address_and_forgery_rejected);
    RUN(test_expiry);
    RUN(test_secrets_differ_between_jars);
    RUN(test_null_backend_and_bad_args);
    return pure_test_finish();
}

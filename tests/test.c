/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "test.h"

int pure_test_failures;
int pure_test_checks;
static int tests_passed, tests_failed;

void pure_test_run(const char *name, void (*fn)(void))
{
    const char *only = getenv("PURE_TEST_ONLY"); /* a part of the names to run (while debugging) */
    if (only && *only && !strstr(name, only))
        return;
    int before = pure_test_failures;
    fn();
    if (pure_test_failures == before) {
        tests_passed++;
        printf("ok   %s\n", name);
    } else {
        tests_failed++;
        printf("FAIL %s\n", name);
    }
    fflush(stdout);
}

int pure_test_finish(void)
{
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return pure_test_failures == 0 && tests_failed == 0 ? 0 : 1;
}

size_t pure_test_unhex(uint8_t *out, size_t cap, const char *hex)
{
    size_t n = 0;
    for (; hex[0] && hex[1] && n < cap; hex += 2) {
        unsigned v;
        if (sscanf(hex, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

int pure_test_eq_hex(const uint8_t *p, size_t n, const char *hex)
{
    uint8_t want[256];
    size_t wn = pure_test_unhex(want, sizeof want, hex);
    return wn == n && memcmp(p, want, n) == 0;
}

/* SPDX-License-Identifier: MIT */
/* test.h: the tiny assertion harness every Pure test executable uses. */
#ifndef PURE_TEST_H
#define PURE_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int pure_test_failures;
extern int pure_test_checks;

/* CHECK(cond): records a failure (file:line and the expression) and carries on. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        pure_test_checks++;                                                                        \
        if (!(cond)) {                                                                             \
            pure_test_failures++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* CHECK_EQ(a, b): integer equality, printing both values on failure. */
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        pure_test_checks++;                                                                        \
        if (check_a_ != check_b_) {                                                                \
            pure_test_failures++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld != %lld)\n", __FILE__,         \
                    __LINE__, #a, #b, check_a_, check_b_);                                         \
        }                                                                                          \
    } while (0)

/* RUN(fn): runs one test function and prints its name and verdict. */
#define RUN(fn) pure_test_run(#fn, fn)
void pure_test_run(const char *name, void (*fn)(void));

/* Decodes hex text into out (at most cap bytes; stops at the first incomplete pair) and returns
 * the byte count. */
size_t pure_test_unhex(uint8_t *out, size_t cap, const char *hex);
/* 1 if the n bytes at p are the bytes the hex text spells (at most 256). */
int pure_test_eq_hex(const uint8_t *p, size_t n, const char *hex);

/* The exit code of a test that cannot run on this machine (it lacks the CPU feature or the
 * privilege the test needs): CMakeLists.txt makes it every test's SKIP_RETURN_CODE, so ctest
 * reports "Not Run (Skipped)" instead of a pass. Test scripts exit 77 the same way. */
#define PURE_TEST_SKIP 77

/* pure_test_finish(): prints "N passed, N failed" over the test functions run and returns the
 * process exit code (0 only if every check held). */
int pure_test_finish(void);

#endif

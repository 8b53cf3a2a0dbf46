/* test.h: the tiny assertion harness every Pure test executable uses. */
#ifndef PURE_TEST_H
#define PURE_TEST_H

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
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);              \
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

/* pure_test_finish(): prints "N passed, N failed" over the test functions run and returns the
 * process exit code (0 only if every check held). */
int pure_test_finish(void);

#endif

#include "test.h"

int pure_test_failures;
int pure_test_checks;
static int tests_passed, tests_failed;

void pure_test_run(const char *name, void (*fn)(void))
{
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

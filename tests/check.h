/* check.h: the smallest test harness that can fail.
 *
 * CHECK(cond, fmt, ...) counts a pass or prints file:line and the message on a failure;
 * check_done(name) prints "name: N passed, N failed" and returns the exit status.
 * Tests compare against independent truth (queueing theory, a second measurement), never
 * against numbers copied from the program's own output. */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond, ...) do {                                              \
        if (cond) { check_passed++; break; }                               \
        check_failed++;                                                    \
        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);              \
        fprintf(stderr, __VA_ARGS__);                                      \
        fputc('\n', stderr);                                               \
    } while (0)

/* Relative closeness, for comparing a measured figure with a formula. */
#define CHECK_NEAR(got, want, rel, what) \
    CHECK(fabs((double)(got) - (double)(want)) <= (rel) * fabs((double)(want)), \
          "%s: got %.6g, want %.6g within %.1f%%", what, (double)(got), (double)(want), 100.0 * (rel))

static int check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    fflush(stdout);
    return check_failed ? 1 : 0;
}
#endif

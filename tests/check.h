/* check.h: the smallest test harness that can fail.
 *
 * CHECK(cond, fmt, ...) counts a pass or prints file:line and the message on a failure;
 * SKIP(n, fmt, ...) counts n checks that cannot run here (no network namespace, no JDK) and
 * says why in one line, so that a total never passes over what did not run;
 * check_done(name) prints "name: N passed, N failed, N skipped" (the line tests/run adds up)
 * and returns the exit status: a skip is not a failure.
 * Each binary groups its checks in `static void test_<what>(...)` functions that main calls in
 * turn; a failure's message starts with what was checked. Helpers carry the file's own prefix.
 * Tests compare against independent truth (queueing theory, a second measurement), never
 * against numbers copied from the program's own output. */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>

static int check_passed, check_failed, check_skipped;

#define CHECK(cond, ...) do {                                              \
        if (cond) { check_passed++; break; }                               \
        check_failed++;                                                    \
        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);              \
        fprintf(stderr, __VA_ARGS__);                                      \
        fputc('\n', stderr);                                               \
    } while (0)

#define SKIP(n, ...) do {                                                  \
        check_skipped += (n);                                              \
        printf("%s:%d: SKIP %d: ", __FILE__, __LINE__, (int)(n));          \
        printf(__VA_ARGS__);                                               \
        putchar('\n');                                                     \
    } while (0)

/* Relative closeness, for comparing a measured figure with a formula. */
#define CHECK_NEAR(got, want, rel, what) \
    CHECK(fabs((double)(got) - (double)(want)) <= (rel) * fabs((double)(want)), \
          "%s: got %.6g, want %.6g within %.1f%%", what, (double)(got), (double)(want), \
          100.0 * (rel))

static int check_done(const char *name)
{
    printf("%s: %d passed, %d failed, %d skipped\n", name, check_passed, check_failed,
           check_skipped);
    fflush(stdout);
    return check_failed ? 1 : 0;
}
#endif

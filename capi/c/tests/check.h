/*
 * The check counter of the native C tests (vectors_test.c, capi_vectors.c): CHECK counts every
 * condition, prints each failing one with its file, line, source text and a printf-style
 * message, and goes on, so one run reports every failure. Each test prints `checks` and
 * `failures` at the end and exits non-zero when `failures` is not 0.
 */
#ifndef KARGS_TESTS_CHECK_H
#define KARGS_TESTS_CHECK_H

#include <stdio.h>

static unsigned long checks;
static unsigned long failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        checks++;                                                               \
        if (!(cond)) {                                                          \
            failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

#endif /* KARGS_TESTS_CHECK_H */

/* test_cases.h — one test binary, one ctest entry per check (issue 18: each DQN/PQN check
 * its own entry, without a file each).
 *
 * A binary lists its cases in a table and ends with FH_TEST_CASES_MAIN(table):
 *   `BINARY CASE` runs that case alone (tests/dqn/fh_add_test_cases.cmake registers one
 *   ctest entry per case, BINARY_CASE), and returns fh_test_finish();
 *   `BINARY` with no argument runs every case in order, as by hand and
 *   scripts/gpu-check.sh do;
 *   an unknown case is an error (exit 2) that lists the known ones.
 * A case that cannot run on this machine (no GPU) calls fh_test_case_skip: alone it exits
 * 77 (ctest: skipped, with the reason printed); among all the cases it prints the reason
 * and the others go on. Every case makes its own fixtures, so a case alone checks what it
 * checks in the full run. */
#ifndef FOXHUNT_TEST_CASES_H
#define FOXHUNT_TEST_CASES_H

#include <stdio.h>
#include <string.h>

#include "test_util.h"

typedef struct {
    const char *name;
    void (*run)(void);
} fh_test_case;

static int fh_test_cases_all = 0; /* 1 while main runs every case */

/* Ends the case (skipped) when it runs alone; else says why and returns. A case that has
 * already failed a check returns fh_test_finish's failure instead of skipping it. */
static inline void fh_test_case_skip(const char *why)
{
    if (fh_test_cases_all) {
        printf("SKIP (this case): %s\n", why);
        return;
    }
    if (fh_test_failed)
        exit(fh_test_finish());
    fh_test_skip(why);
}

static inline int fh_test_cases_run(const fh_test_case *cases, size_t n, int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "usage: %s [CASE]\n", argv[0]);
        return 2;
    }
    if (argc == 1) {
        fh_test_cases_all = 1;
        for (size_t i = 0; i < n; i++) {
            printf("== %s\n", cases[i].name);
            fflush(stdout);
            cases[i].run();
        }
        return fh_test_finish();
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].run();
            return fh_test_finish();
        }
    }
    fprintf(stderr, "%s: no case '%s'; the cases are:", argv[0], argv[1]);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
}

#define FH_TEST_CASES_MAIN(table)                                                        \
    int main(int argc, char **argv)                                                      \
    {                                                                                    \
        return fh_test_cases_run((table), sizeof(table) / sizeof((table)[0]), argc, argv); \
    }

#endif

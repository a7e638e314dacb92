/* report_fixture.h — what the tear sheet's tests (test_report_html, test_report_browser)
 * share: running the foxhunt binary, a tiny training run, and reading the page's data
 * back (an attribute of its <body>, its JSON block, a CSV by column). Include after
 * test_proc.h. */
#ifndef FOXHUNT_REPORT_FIXTURE_H
#define FOXHUNT_REPORT_FIXTURE_H

#include <string.h>

#include "test_util.h"

/* A tiny CPU run (16 x 32, 2 iterations) on `bars` synthetic hourly bars into DIR/run. */
static inline int fh_report_train(const char *dir, const char *bars, char *run_dir, size_t size)
{
    snprintf(run_dir, size, "%s/run", dir);
    char *train[] = {"train", "--device", "cpu", "--episodes", "16", "--steps", "32",
                     "--iterations", "2", "--epochs", "1", "--synthetic-bars", (char *)bars,
                     "--threads", "1", "--out", run_dir, NULL};
    char *err = NULL;
    int rc = fh_run_foxhunt(dir, "train", train, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "foxhunt train exited %d: %s\n", rc, err ? err : "");
    free(err);
    return rc;
}

/* `foxhunt eval --report HTML` (plus the extra flags); skips the test when this build
 * carries no dygraphs, after checking that the error says what to install. */
static inline int fh_report_eval(const char *dir, const char *log, const char *checkpoint,
                          const char *html, char **extra)
{
    char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    argv[n++] = "eval";
    argv[n++] = "--checkpoint";
    argv[n++] = (char *)checkpoint;
    argv[n++] = "--report";
    argv[n++] = (char *)html;
    for (int i = 0; extra && extra[i] && n < FH_PROC_MAX_ARGS - 1; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    char *out = NULL, *err = NULL;
    int rc = fh_run_foxhunt(dir, log, argv, &out, &err);
    if (rc != 0 && err && strstr(err, "libjs-dygraphs")) {
        CHECK_MSG(rc == 1 && strstr(err, "scripts/setup.sh"),
                  "without dygraphs, eval --report should exit 1 naming scripts/setup.sh: %s", err);
        free(out);
        free(err);
        fh_remove_tree(dir);
        fh_test_skip("this foxhunt was built without dygraphs (install libjs-dygraphs: "
                     "scripts/setup.sh, then re-run cmake)");
    }
    if (rc != 0)
        fprintf(stderr, "foxhunt eval (%s) exited %d: %s\n", log, rc, err ? err : "");
    else
        CHECK_MSG(out && strstr(out, "(report written to "), "eval did not say where the "
                  "report went: %s", out ? out : "");
    free(out);
    free(err);
    return rc;
}

/* The value of attribute name="..." in the first <body ...> tag of html, into out
 * (empty when absent). */
static inline void fh_body_attr(const char *html, const char *name, char *out, size_t size)
{
    out[0] = '\0';
    const char *body = strstr(html, "<body");
    const char *end = body ? strchr(body, '>') : NULL;
    if (!end)
        return;
    char key[128];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *at = strstr(body, key);
    if (!at || at > end)
        return;
    at += strlen(key);
    const char *close = strchr(at, '"');
    size_t n = close ? (size_t)(close - at) : 0;
    if (n >= size)
        n = size - 1;
    memcpy(out, at, n);
    out[n] = '\0';
}

/* A CSV read whole: its header's fields and each row's fields (no quoting). */
typedef struct {
    char *text;
    int columns;
    size_t rows;        /* data rows */
    char **cells;       /* (rows + 1) x columns: row 0 is the header */
} fh_test_csv;

static inline int fh_test_csv_read(fh_test_csv *c, const char *path)
{
    memset(c, 0, sizeof *c);
    c->text = fh_read_text(path);
    if (!c->text)
        return 0;
    size_t lines = 0;
    for (const char *p = c->text; *p; p++)
        lines += *p == '\n';
    c->columns = 1;
    for (const char *p = c->text; *p && *p != '\n'; p++)
        c->columns += *p == ',';
    c->cells = calloc((lines + 1) * (size_t)c->columns, sizeof *c->cells);
    if (!c->cells)
        return 0;
    char *p = c->text;
    size_t row = 0;
    while (*p && row <= lines) {
        char *eol = strchr(p, '\n');
        if (eol)
            *eol = '\0';
        for (int k = 0; k < c->columns; k++) {
            char *comma = p ? strchr(p, ',') : NULL;
            if (comma)
                *comma = '\0';
            c->cells[row * (size_t)c->columns + (size_t)k] = p ? p : "";
            p = comma ? comma + 1 : NULL;
        }
        row++;
        if (!eol)
            break;
        p = eol + 1;
    }
    c->rows = row - 1;
    return 1;
}

static inline void fh_test_csv_free(fh_test_csv *c)
{
    free(c->cells);
    free(c->text);
}

static inline int fh_test_csv_column(const fh_test_csv *c, const char *name)
{
    for (int k = 0; k < c->columns; k++)
        if (strcmp(c->cells[k], name) == 0)
            return k;
    return -1;
}

/* Data row r's (0-based) field in column k. */
static inline const char *fh_test_csv_cell(const fh_test_csv *c, size_t r, int k)
{
    return c->cells[(r + 1) * (size_t)c->columns + (size_t)k];
}

#endif

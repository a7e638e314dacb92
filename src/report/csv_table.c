/* csv_table.c — see csv_table.h. */
#include "report/csv_table.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/files.h"

void fh_csv_table_free(fh_csv_table *t)
{
    for (int c = 0; c < t->columns && t->names; c++)
        free(t->names[c]);
    free(t->names);
    free(t->values);
    memset(t, 0, sizeof *t);
}

int fh_csv_table_column(const fh_csv_table *t, const char *name)
{
    for (int c = 0; c < t->columns; c++)
        if (strcmp(t->names[c], name) == 0)
            return c;
    return -1;
}

static void chomp(char *line)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
}

static fh_status read_header(fh_csv_table *t, char *line, const char *path, fh_error *err)
{
    chomp(line);
    int n = 1;
    for (const char *p = line; *p; p++)
        n += *p == ',';
    t->names = calloc((size_t)n, sizeof *t->names);
    if (!t->names)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    char *field = line;
    for (int c = 0; c < n; c++) {
        char *comma = strchr(field, ',');
        if (comma)
            *comma = '\0';
        t->names[c] = strdup(field);
        t->columns = c + 1;
        if (!t->names[c])
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        field = comma ? comma + 1 : field + strlen(field);
    }
    if (n == 1 && line[0] == '\0')
        return fh_error_set(err, FH_ERR_INPUT, "%s: the first line (the header) is empty",
                            path);
    return FH_OK;
}

/* One data row into row (columns values); missing trailing fields are NaN. */
static void read_row(char *line, double *row, int columns)
{
    chomp(line);
    char *field = line;
    for (int c = 0; c < columns; c++) {
        row[c] = NAN;
        if (!field)
            continue;
        char *comma = strchr(field, ',');
        if (comma)
            *comma = '\0';
        char *end;
        errno = 0;
        double v = strtod(field, &end);
        if (end != field && *end == '\0' && errno == 0)
            row[c] = v;
        field = comma ? comma + 1 : NULL;
    }
}

fh_status fh_csv_table_read(fh_csv_table *t, const char *path, fh_error *err)
{
    memset(t, 0, sizeof *t);
    /* a run's metrics.csv: a FIFO of that name would block the read (issue 32) */
    FILE *f = fh_fopen_regular(path, "CSV table (a run's metrics.csv)", O_RDONLY, err);
    if (!f)
        return err ? err->status : FH_ERR_INPUT;
    char *line = NULL;
    size_t line_cap = 0, cap = 0;
    fh_status st = FH_OK;
    if (getline(&line, &line_cap, f) < 0)
        st = fh_error_set(err, FH_ERR_INPUT, "%s is empty: no header row", path);
    else
        st = read_header(t, line, path, err);
    while (st == FH_OK && getline(&line, &line_cap, f) >= 0) {
        chomp(line);
        if (line[0] == '\0')
            continue;
        if (t->rows == cap) {
            cap = cap ? 2 * cap : 64;
            double *bigger = realloc(t->values, cap * (size_t)t->columns * sizeof *bigger);
            if (!bigger) {
                st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory reading %s",
                                  __FILE__, __LINE__, path);
                break;
            }
            t->values = bigger;
        }
        read_row(line, t->values + t->rows * (size_t)t->columns, t->columns);
        t->rows++;
    }
    if (st == FH_OK && ferror(f))
        st = fh_error_set(err, FH_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
    free(line);
    fclose(f);
    if (st != FH_OK)
        fh_csv_table_free(t);
    return st;
}

/* csv_table.h — a numeric CSV with a header row read into named columns: the run's
 * metrics.csv, whose training curves the tear sheet plots. No quoting (the files foxhunt
 * writes have none); an empty or non-numeric field reads as NaN. */
#ifndef FOXHUNT_CSV_TABLE_H
#define FOXHUNT_CSV_TABLE_H

#include <stddef.h>

#include "foxhunt/error.h"

typedef struct {
    int columns;
    size_t rows;
    char **names;   /* (columns) */
    double *values; /* (rows x columns), row-major */
} fh_csv_table;

fh_status fh_csv_table_read(fh_csv_table *t, const char *path, fh_error *err);
void fh_csv_table_free(fh_csv_table *t);
/* The column called name, or -1. */
int fh_csv_table_column(const fh_csv_table *t, const char *name);

#endif

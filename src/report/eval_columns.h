/* eval_columns.h — the columns of the evaluation's two tables (performance and
 * positions), shared by the printed table (eval_report.c) and the HTML tear sheet
 * (tear_sheet.c) so both show the same numbers the same way (docs/EVALUATION.md). */
#ifndef FOXHUNT_EVAL_COLUMNS_H
#define FOXHUNT_EVAL_COLUMNS_H

#include <stddef.h>

#include "foxhunt/metrics.h"

typedef enum { FH_EVAL_TABLE_PERFORMANCE, FH_EVAL_TABLE_POSITIONS, FH_EVAL_TABLES } fh_eval_table;

typedef struct {
    const char *header;   /* as printed: "cum.ret" */
    const char *json_key; /* eval.json's key: "cumulative_return" */
    int width;            /* printed width, right-aligned */
} fh_eval_column;

/* The number of columns of a table (after the policy's name), and column c of it. */
int fh_eval_column_count(fh_eval_table table);
const fh_eval_column *fh_eval_column_at(fh_eval_table table, int c);
/* Column c of a table for m, formatted as printed without padding ("12.30%"). */
void fh_eval_cell(fh_eval_table table, int c, const fh_backtest_metrics *m, char *out,
                  size_t size);

#endif

/* tear_sheet_risk.h — the tear sheet's risk section and trades on the price (issue 36
 * item 6): per policy VaR, CVaR, alpha, beta and the best and worst periods; the worst
 * drawdowns of the greedy policy and of buy-and-hold; yearly returns as bars; and the
 * data of the price chart with the greedy policy's entries, exits and barrier hits.
 * The numbers are risk_metrics.h's, the ones eval.json carries. */
#ifndef FOXHUNT_TEAR_SHEET_RISK_H
#define FOXHUNT_TEAR_SHEET_RISK_H

#include <stdio.h>

#include "report/eval_report.h"

/* The risk section's HTML (tables and yearly bars). */
fh_status fh_tear_sheet_put_risk(FILE *f, const fh_eval_report *r, fh_error *err);

/* The price chart's JSON member ,"price":{"close":[...], marker series...} over the
 * plotted points (fh_ts_downsample's stride); nothing without a close price. */
void fh_tear_sheet_put_price(FILE *f, const fh_eval_report *r, size_t stride, size_t points);

#endif

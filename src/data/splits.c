/* splits.c — where training, validation and test lie in time, one fold of a
 * walk-forward included (data.h, docs/EVALUATION.md). Pure arithmetic on bar counts,
 * so every layout can be checked by hand in tests/data/test_data_splits.c. */
#include <math.h>
#include <string.h>

#include "foxhunt/data.h"

fh_split_spec fh_split_spec_simple(double train_fraction)
{
    fh_split_spec s;
    memset(&s, 0, sizeof s);
    s.train_fraction = train_fraction;
    s.window = FH_WINDOW_EXPANDING;
    return s;
}

const char *fh_split_name(fh_split split)
{
    switch (split) {
    case FH_SPLIT_TRAIN: return "train";
    case FH_SPLIT_VALIDATION: return "validation";
    case FH_SPLIT_TEST: return "test";
    case FH_SPLIT_ALL: return "all";
    }
    return "?";
}

fh_status fh_split_bounds_make(size_t n, const fh_split_spec *spec, fh_split_bounds *b,
                               fh_error *err)
{
    memset(b, 0, sizeof *b);
    const double tf = spec->train_fraction, vf = spec->validation_fraction;
    if (!(tf > 0.0 && tf < 1.0))
        return fh_error_set(err, FH_ERR_INPUT,
                            "train fraction %g is outside (0, 1); use e.g. 0.7", tf);
    if (!(vf >= 0.0 && tf + vf < 1.0))
        return fh_error_set(err, FH_ERR_INPUT,
                            "validation fraction %g with train fraction %g leaves no test "
                            "split; their sum must stay below 1 (e.g. 0.7 and 0.1)", vf, tf);
    const int folds = spec->folds < 1 ? 1 : spec->folds;
    if (spec->fold < 0 || spec->fold >= folds)
        return fh_error_set(err, FH_ERR_INPUT, "fold %d is outside 0..%d", spec->fold,
                            folds - 1);
    const int has_val = vf > 0.0;
    const size_t gaps = (has_val ? 2 : 1) * spec->gap;
    if (n <= gaps + 4)
        return fh_error_set(err, FH_ERR_INPUT,
                            "%zu bars after the feature warm-up cannot hold the splits and "
                            "%s %zu-bar gap%s; use more data or a smaller split gap "
                            "(--split-gap; below %d lets a later split's features see the "
                            "earlier split's bars)", n, has_val ? "their two" : "the",
                            spec->gap, has_val ? "s" : "", FH_FEATURE_WARMUP);
    const size_t usable = n - gaps;
    const size_t train0 = (size_t)floor(tf * (double)usable);
    const size_t val = has_val ? (size_t)floor(vf * (double)usable) : 0;
    if (train0 < 1)
        return fh_error_set(err, FH_ERR_INPUT,
                            "train fraction %g leaves no training bars out of %zu", tf, usable);
    if (has_val && val < 2)
        return fh_error_set(err, FH_ERR_INPUT,
                            "validation fraction %g of %zu bars is under 2 bars; raise it or "
                            "set it to 0 (no validation split)", vf, usable);
    const size_t rest = usable - train0 - val;
    const size_t seg = rest / (size_t)folds;
    if (seg < 2)
        return fh_error_set(err, FH_ERR_INPUT,
                            "the test part (%zu bars) is too short for %d fold%s of at least "
                            "2 bars; lower the train or validation fraction or the folds",
                            rest, folds, folds == 1 ? "" : "s");
    const size_t k = (size_t)spec->fold;
    b->test_begin = train0 + val + gaps + k * seg;
    b->test_end = (k + 1 == (size_t)folds) ? n : b->test_begin + seg + 1;
    b->val_end = b->test_begin - (has_val ? spec->gap : 0);
    b->val_begin = b->val_end - val;
    b->train_end = b->val_begin - (has_val ? spec->gap : 0);
    if (!has_val) {
        b->train_end = b->test_begin - spec->gap;
        b->val_begin = b->val_end = b->train_end;
    }
    b->train_begin = spec->window == FH_WINDOW_ROLLING ? b->train_end - train0 : 0;
    return FH_OK;
}

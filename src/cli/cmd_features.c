/* cmd_features.c — `foxhunt features`: bars (a CSV, or the synthetic market when no
 * --data is given) -> the 51 features as CSV (SPEC §2, §10; docs/FEATURES.md).
 *
 * Output: a header `time,<51 feature names>,sigma`, then one row per bar from bar
 * FH_FEATURE_WARMUP on (earlier rows have no defined features). Raw values by default;
 * --normalize writes the z-scored, clipped values fitted on the first
 * --train-fraction of those rows. The file is written to OUT.tmp and renamed, so a
 * failed run never leaves a partial OUT. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "cli/commands.h"
#include "foxhunt/data.h"
#include "foxhunt/files.h"
#include "foxhunt/format.h" /* fh_time_format */

static fh_status write_features(const char *out_path, const fh_bars *bars,
                                const float *features, const float *sigma, size_t begin,
                                fh_error *err)
{
    size_t len = strlen(out_path);
    char *tmp = malloc(len + 5);
    if (!tmp)
        return fh_error_set(err, FH_ERR_FAILURE, "out of memory");
    memcpy(tmp, out_path, len);
    memcpy(tmp + len, ".tmp", 5);
    /* a FIFO or a device named OUT.tmp is refused, not written into (issue 32) */
    FILE *f = fh_fopen_regular(tmp, "--out's temporary file", O_WRONLY | O_CREAT | O_TRUNC, err);
    if (!f) {
        free(tmp);
        if (err)
            err->status = FH_ERR_INPUT; /* a path the user gave: exit 2 */
        return FH_ERR_INPUT;
    }
    fprintf(f, "time");
    for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
        fprintf(f, ",%s", fh_feature_name(k));
    fprintf(f, ",sigma\n");
    for (size_t i = begin; i < bars->n; i++) {
        char ts[32];
        fh_time_format(bars->time[i], ts, sizeof ts);
        fputs(ts, f);
        const float *row = features + (i - begin) * FH_N_MARKET_FEATURES;
        for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
            fprintf(f, ",%.9g", (double)row[k]);
        fprintf(f, ",%.9g\n", (double)sigma[i - begin]);
    }
    int e = fh_replace_with_tmp(f, 1, 0, tmp, out_path);
    fh_status st = e ? fh_error_set(err, FH_ERR_FAILURE, "cannot write %s: %s%s", out_path,
                                    strerror(e), fh_write_error_hint(e))
                     : FH_OK;
    free(tmp);
    return st;
}

static const char *interval_name(double s)
{
    if (s == 60) return "1-minute";
    if (s == 300) return "5-minute";
    if (s == 900) return "15-minute";
    if (s == 3600) return "hourly";
    if (s == 14400) return "4-hourly";
    if (s == 86400) return "daily";
    if (s == 604800) return "weekly";
    return "irregular";
}

int fh_cmd_features(int argc, char **argv)
{
    fh_synth_config synth;
    fh_synth_config_default(&synth);
    int normalize = 0, synthetic = 0;
    fh_arg args[] = {
        {"--synthetic", FH_ARG_FLAG, &synthetic, NULL, "use the synthetic market (the "
         "default when --data is absent)", NULL, 0, 0, 0},
        {"--normalize", FH_ARG_FLAG, &normalize, NULL, "write z-scored features (fit on "
         "the training split, clipped to +-5) instead of raw values", NULL, 0, 0, 0},
    };
    /* settings: the table's flags (config_flags.h); --seed and --bars predate the table */
    fh_key_flag settings[] = {
        {.key = "data", .note = "Yahoo or kline style"},
        {.key = "out", .note = "here: FILE.csv of the features (required)"},
        {.key = "synthetic_seed", .flag = "--seed"},
        {.key = "synthetic_bars", .flag = "--bars"},
        /* train's default (the settings table's), so both fit on the same share */
        {.key = "train_fraction", .note = "here: with --normalize, of the bars after the "
         "warm-up, no validation split and no gap"},
    };
    const int n_keys = (int)(sizeof settings / sizeof settings[0]);
    fh_train_config fl; /* the flags' values */
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_key_flags_parse(&fl, "features",
                           "Compute the 51 causal market features (docs/FEATURES.md) of a CSV "
                           "or of the synthetic market, and write them as CSV.",
                           settings, n_keys, args, (int)(sizeof args / sizeof args[0]), argc, argv,
                           &help, &err) != FH_OK)
        return fh_cli_report("features", &err);
    if (help)
        return 0;
    const char *data = fh_key_flag_of(settings, n_keys, "data")->seen ? fl.data : NULL;
    const char *out = fh_key_flag_of(settings, n_keys, "out")->seen ? fl.out : NULL;
    const uint64_t seed = fl.synthetic_seed;
    const double train_fraction = fl.train_fraction;
    if (!out) {
        fh_error_set(&err, FH_ERR_INPUT, "--out FILE.csv is required (see foxhunt features "
                     "--help)");
        return fh_cli_report("features", &err);
    }
    if (data && (synthetic || fh_key_flag_of(settings, n_keys, "synthetic_seed")->seen ||
                 fh_key_flag_of(settings, n_keys, "synthetic_bars")->seen)) {
        fh_error_set(&err, FH_ERR_INPUT, "--data cannot be combined with --synthetic, "
                     "--seed or --bars (those describe the synthetic market)");
        return fh_cli_report("features", &err);
    }

    fh_bars bars;
    fh_status st;
    if (data) {
        st = fh_bars_load_csv(data, &bars, &err);
    } else {
        synth.seed = seed;
        synth.n_bars = (size_t)fl.synthetic_bars;
        st = fh_synth_generate(&synth, &bars, NULL, &err);
    }
    if (st != FH_OK)
        return fh_cli_report("features", &err);
    if (bars.reversed)
        fprintf(stderr, "foxhunt features: note: %s is in descending time order; "
                "reversed it to ascending\n", data);
    if (bars.headerless_klines)
        fprintf(stderr, "foxhunt features: note: %s has no header row; read it as exchange "
                "klines (open time, open, high, low, close, volume, ...)\n", data);

    float *features = NULL, *sigma = NULL;
    size_t begin = FH_FEATURE_WARMUP, rows = bars.n - begin;
    fh_market market;
    memset(&market, 0, sizeof market);
    if (normalize) {
        fh_split_spec split = fh_split_spec_simple(train_fraction);
        st = fh_market_build(&bars, NULL, &split, NULL, &market, &err);
        if (st == FH_OK)
            st = write_features(out, &bars, market.features, market.sigma, begin, &err);
    } else {
        features = malloc(bars.n * FH_N_MARKET_FEATURES * sizeof *features);
        sigma = malloc(bars.n * sizeof *sigma);
        st = features && sigma ? fh_features_compute(&bars, features, sigma, &err)
                               : fh_error_set(&err, FH_ERR_FAILURE, "out of memory");
        if (st == FH_OK)
            st = write_features(out, &bars, features + begin * FH_N_MARKET_FEATURES,
                                sigma + begin, begin, &err);
    }
    if (st == FH_OK) {
        char t0[32], t1[32];
        fh_time_format(bars.time[0], t0, sizeof t0);
        fh_time_format(bars.time[bars.n - 1], t1, sizeof t1);
        double dt = fh_bars_interval_seconds(&bars);
        if (data)
            printf("data:     %s\n", data);
        else
            printf("data:     synthetic market (seed %llu)\n", (unsigned long long)seed);
        printf("bars:     %zu, %s .. %s UTC\n", bars.n, t0, t1);
        char gaps[160];
        fh_bars_describe_gaps(&bars, gaps, sizeof gaps);
        printf("interval: %.0f s (%s, median spacing); %s\n", dt, interval_name(dt), gaps);
        printf("features: %zu rows x %d features (%s) + sigma written to %s "
               "(the first %d bars are the warm-up)\n",
               rows, FH_N_MARKET_FEATURES,
               normalize ? "z-scored on the training split, clipped to +-5" : "raw",
               out, FH_FEATURE_WARMUP);
    }
    free(features);
    free(sigma);
    fh_market_free(&market);
    fh_bars_free(&bars);
    return st == FH_OK ? 0 : fh_cli_report("features", &err);
}

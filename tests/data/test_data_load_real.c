/* test_data_load_real.c — both files in ../shared/data load with the right row counts
 * and exact first/last bars (SPEC §2; ../shared/data/README.md). Expected values are
 * copied from the files' first and last rows; times are `date -u -d ... +%s`.
 * Note: spy_daily.csv has 6,874 data rows (the README's 6,873 is `wc -l` minus the
 * header, which misses the last row because the file has no final newline). */
#include <string.h>
#include <sys/stat.h>

#include "foxhunt/data.h"
#include "test_util.h"

static void check_bar(const fh_bars *b, size_t i, int64_t t, double o, double h, double l,
                      double c, double v)
{
    CHECK_MSG(b->time[i] == t, "bar %zu time %lld, expected %lld", i, (long long)b->time[i],
              (long long)t);
    CHECK(b->open[i] == o);
    CHECK(b->high[i] == h);
    CHECK(b->low[i] == l);
    CHECK(b->close[i] == c);
    CHECK(b->volume[i] == v);
}

int main(void)
{
    struct stat st;
    if (stat(FH_SHARED_DATA_DIR, &st) != 0)
        fh_test_skip(FH_SHARED_DATA_DIR " is absent: no real market data to test on");
    fh_bars b;
    fh_error err;

    CHECK_MSG(fh_bars_load_csv(FH_SHARED_DATA_DIR "/spy_daily.csv", &b, &err) == FH_OK, "%s",
              err.message);
    CHECK_MSG(b.n == 6874, "spy rows %zu", b.n);
    CHECK(!b.reversed);
    if (b.n == 6874) {
        check_bar(&b, 0, 728265600, 43.968750, 43.968750, 43.750000, 43.937500, 1003200);
        check_bar(&b, b.n - 1, 1589500800, 282.369995, 286.329987, 281.339996, 286.279999,
                  111040600);
    }
    CHECK(fh_bars_interval_seconds(&b) == 86400.0);
    fh_bars_free(&b);

    CHECK_MSG(fh_bars_load_csv(FH_SHARED_DATA_DIR "/btcusdt_1h.csv", &b, &err) == FH_OK, "%s",
              err.message);
    CHECK_MSG(b.n == 29303, "btc rows %zu", b.n);
    CHECK(!b.reversed);
    if (b.n == 29303) {
        check_bar(&b, 0, 1640995200, 46216.93, 46731.39, 46208.37, 46656.13, 1503.33095);
        check_bar(&b, b.n - 1, 1746486000, 95049.48, 95101.89, 95049.48, 95101.89, 9.3906);
        /* hourly with exchange outages: strictly increasing, some gaps > 1 h */
        size_t gaps = 0, bad = 0;
        for (size_t i = 1; i < b.n; i++) {
            bad += b.time[i] <= b.time[i - 1];
            gaps += b.time[i] - b.time[i - 1] > 3600;
        }
        CHECK(bad == 0);
        CHECK_MSG(gaps > 0, "expected gaps in the hourly data");
    }
    CHECK(fh_bars_interval_seconds(&b) == 3600.0);
    fh_bars_free(&b);
    return fh_test_finish();
}

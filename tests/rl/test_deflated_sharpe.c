/* test_deflated_sharpe.c — the probabilistic and deflated Sharpe ratios (metrics.h):
 * the normal quantile against tabulated values and as the CDF's inverse on random
 * probabilities; PSR by hand; the deflated Sharpe against the worked example of Bailey
 * and Lopez de Prado (2014, "The Deflated Sharpe Ratio", section 5: annualised SR 2.5
 * over T = 1250 daily returns, skew -3, kurtosis 10, N = 100 trials whose annualised
 * Sharpe ratios have variance 1/2: DSR 0.9004); more trials deflate more. */
#include <math.h>
#include <stdint.h>

#include "foxhunt/metrics.h"
#include "test_util.h"

int main(void)
{
    /* tabulated quantiles (R's qnorm) */
    CHECK_CLOSE(fh_normal_quantile(0.975), 1.959963984540054, 1e-14, 1e-14);
    CHECK_CLOSE(fh_normal_quantile(0.5), 0.0, 1e-15, 0);
    CHECK_CLOSE(fh_normal_quantile(0.01), -2.326347874040841, 1e-14, 1e-14);
    CHECK_CLOSE(fh_normal_quantile(1e-10), -6.361340902404056, 1e-12, 1e-13);
    CHECK(isnan(fh_normal_quantile(0.0)) && isnan(fh_normal_quantile(1.0)));
    /* the inverse of the CDF on random p */
    uint64_t s = 7;
    double worst = 0;
    for (int i = 0; i < 10000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double p = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        double back = fh_normal_cdf(fh_normal_quantile(p));
        double rel = fabs(back - p) / p;
        worst = rel > worst ? rel : worst;
    }
    CHECK_MSG(worst < 1e-12, "Phi(Phi^-1(p)) off by %g relative", worst);

    /* PSR by hand: SR 0.1 per step, benchmark 0, T 101, normal returns (skew 0,
     * kurtosis 3): z = 0.1 * 10 / sqrt(1 + 0.5 * 0.01) */
    double z = 1.0 / sqrt(1.005);
    CHECK_CLOSE(fh_probabilistic_sharpe(0.1, 0.0, 101, 0.0, 3.0), 0.5 * erfc(-z / sqrt(2.0)),
                1e-15, 1e-15);

    /* the paper's worked example, per step: SR 2.5 / sqrt(250), variance 0.5 / 250 */
    double sr = 2.5 / sqrt(250.0), var = 0.5 / 250.0;
    double sr0 = fh_expected_max_sharpe(100, var);
    CHECK_CLOSE(sr0 * sqrt(250.0), 1.7894, 2e-3, 0); /* the paper's SR0, annualised */
    double dsr = fh_deflated_sharpe(sr, 1250, -3.0, 10.0, 100, var);
    CHECK_CLOSE(dsr, 0.9004, 1e-3, 0);
    /* one trial: nothing chosen, DSR = PSR against 0; more trials, a higher bar */
    CHECK(fh_expected_max_sharpe(1, var) == 0.0);
    CHECK(fh_deflated_sharpe(sr, 1250, -3.0, 10.0, 1, var) ==
          fh_probabilistic_sharpe(sr, 0.0, 1250, -3.0, 10.0));
    CHECK(fh_deflated_sharpe(sr, 1250, -3.0, 10.0, 1000, var) < dsr);
    return fh_test_finish();
}

/* env_config.c — SPEC §3 defaults and range checks for fh_env_config (env.h). */
#include <math.h>

#include "foxhunt/env.h"

fh_env_config fh_env_config_default(void)
{
    fh_env_config cfg = {0};
    cfg.initial_equity = 10000.0;
    cfg.half_spread = 1e-4f; /* 1 bp */
    cfg.impact = 5e-4f;      /* 5 bp at full urgency */
    cfg.pt = 2.0f;
    cfg.sl = 1.0f;
    cfg.pt_bonus = 0.5f;
    cfg.sl_scale = 0.5f;
    cfg.div_coef = 0.01f;
    cfg.cur_coef = 0.01f;
    cfg.risk_coef = 1.0f;
    cfg.reward_scale = 100.0f;
    cfg.ruin = 0.5f;
    cfg.max_hold = 50;
    cfg.horizon = 256;
    cfg.barrier_mode = FH_BARRIER_MODE_LIQUIDATE;
    cfg.turnover_penalty = 0.0f;
    cfg.obs_noise = 0.0f;
    cfg.noise_seed = 0ULL;
    return cfg;
}

#define CHECK_RANGE(cond, name, value)                                                   \
    do {                                                                                 \
        if (!(cond))                                                                     \
            return fh_error_set(err, FH_ERR_INPUT,                                       \
                                "environment config: %s = %g is out of range (need %s)", \
                                name, (double)(value), #cond);                          \
    } while (0)

fh_status fh_env_config_validate(const fh_env_config *cfg, fh_error *err)
{
    CHECK_RANGE(isfinite(cfg->initial_equity) && cfg->initial_equity > 0.0, "initial_equity",
                cfg->initial_equity);
    CHECK_RANGE(isfinite(cfg->half_spread) && cfg->half_spread >= 0.0f, "half_spread",
                cfg->half_spread);
    CHECK_RANGE(isfinite(cfg->impact) && cfg->impact >= 0.0f, "impact", cfg->impact);
    CHECK_RANGE(isfinite(cfg->pt) && cfg->pt > 0.0f, "pt", cfg->pt);
    CHECK_RANGE(isfinite(cfg->sl) && cfg->sl > 0.0f, "sl", cfg->sl);
    CHECK_RANGE(isfinite(cfg->pt_bonus), "pt_bonus", cfg->pt_bonus);
    CHECK_RANGE(isfinite(cfg->sl_scale), "sl_scale", cfg->sl_scale);
    CHECK_RANGE(isfinite(cfg->div_coef) && cfg->div_coef >= 0.0f, "div_coef", cfg->div_coef);
    CHECK_RANGE(isfinite(cfg->cur_coef) && cfg->cur_coef >= 0.0f, "cur_coef", cfg->cur_coef);
    CHECK_RANGE(isfinite(cfg->risk_coef) && cfg->risk_coef >= 0.0f, "risk_coef",
                cfg->risk_coef);
    CHECK_RANGE(isfinite(cfg->reward_scale) && cfg->reward_scale > 0.0f, "reward_scale",
                cfg->reward_scale);
    CHECK_RANGE(cfg->ruin > 0.0f && cfg->ruin < 1.0f, "ruin", cfg->ruin);
    CHECK_RANGE(cfg->max_hold >= 0, "max_hold", cfg->max_hold);
    CHECK_RANGE(cfg->horizon >= 1, "horizon", cfg->horizon);
    CHECK_RANGE(isfinite(cfg->turnover_penalty) && cfg->turnover_penalty >= 0.0f,
                "turnover_penalty", cfg->turnover_penalty);
    CHECK_RANGE(isfinite(cfg->obs_noise) && cfg->obs_noise >= 0.0f, "obs_noise", cfg->obs_noise);
    CHECK_RANGE(cfg->barrier_mode >= FH_BARRIER_MODE_LIQUIDATE &&
                    cfg->barrier_mode <= FH_BARRIER_MODE_OFF,
                "barrier_mode", cfg->barrier_mode);
    return FH_OK;
}

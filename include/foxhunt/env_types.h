/* env_types.h — the environment's plain data types, shared by the public C API
 * (foxhunt/env.h), the CPU environment and the GPU kernels (SPEC §3; issue 16).
 *
 * Like shapes.h it is compiled by the C compiler and by NVRTC at run time (it is
 * embedded in the binary and handed to NVRTC as the include "foxhunt/env_types.h").
 * So it keeps to the common subset of C11 and C++17 device code: no includes but
 * "foxhunt/shapes.h", no stdint types, no bool, no enums; plain structs whose layout is
 * identical on host and device (the GPU parity tests compare them bit for bit: do not
 * reorder fields). The functions over these types (env_step, ...) are internal:
 * src/env/common_device_functions.cuh. */
#ifndef FOXHUNT_ENV_TYPES_H
#define FOXHUNT_ENV_TYPES_H

#include "foxhunt/shapes.h"

/* Barrier hit kinds (fh_step_result.barrier_hit, log counters). */
#define FH_BARRIER_NONE 0
#define FH_BARRIER_PROFIT_TAKE 1
#define FH_BARRIER_STOP_LOSS 2
#define FH_BARRIER_TIME_LIMIT 3
#define FH_BARRIER_N_KINDS 4

/* What a barrier hit does (fh_env_config.barrier_mode; issue 34 item 3). */
#define FH_BARRIER_MODE_LIQUIDATE 0 /* SPEC §3.3: the hit closes the whole position */
#define FH_BARRIER_MODE_REWARD 1    /* the hit scales that step's reward only; the
                                       position stays and the barriers re-arm */
#define FH_BARRIER_MODE_OFF 2       /* no barriers: no hits, no forced exits */

/* ---- types: plain structs, identical layout on host and device ---- */

typedef struct fh_rng {
    unsigned long long state;
    unsigned long long inc; /* stream selector, always odd */
} fh_rng;

/* All coefficients of SPEC §3; plain data, passed by value as a kernel argument.
 * Host defaults: fh_env_config_default() (include/foxhunt/env.h). */
typedef struct fh_env_config {
    double initial_equity; /* starting cash (default 10000) */
    float half_spread;     /* cost rate floor per unit turnover (1e-4 = 1 bp) */
    float impact;          /* extra cost rate per unit urgency (5e-4 = 5 bp) */
    float pt;              /* profit-take distance in sigmas (2) */
    float sl;              /* stop-loss distance in sigmas (1) */
    float pt_bonus;        /* barrier_scale on a profit-take (0.5) */
    float sl_scale;        /* barrier_scale on a stop-loss (0.5) */
    float div_coef;        /* diversity penalty coefficient (0.01) */
    float cur_coef;        /* curiosity bonus coefficient (0.01) */
    float risk_coef;       /* risk penalty coefficient (1.0) */
    float reward_scale;    /* reward scale (100) */
    float ruin;            /* terminal when equity < ruin * initial (0.5) */
    int max_hold;          /* barrier time limit in steps (50; 0: none) */
    int horizon;           /* episode length before truncation (256) */
    int barrier_mode;      /* FH_BARRIER_MODE_* (liquidate) */
    float turnover_penalty; /* reward penalty per unit of exposure traded (0) */
    float obs_noise;       /* std of the Gaussian noise on the market features of
                              training observations (0: none; env_observe_train) */
    unsigned long long noise_seed; /* the noise's key: the training collectors set it
                              to the run's seed (fh_env_config_default: 0) */
} fh_env_config;

/* A device-compatible view of one data split (built on the host from fh_market_view).
 * Several assets' training splits laid end to end form one market of n_segments
 * segments (issue 34): an episode starts and ends inside one segment. n_segments <= 1:
 * one segment, the whole market (segment_ends unread, may be NULL). */
typedef struct fh_env_market {
    const float *features; /* (n_bars, FH_N_MARKET_FEATURES) normalised */
    const float *close;    /* (n_bars) close prices, > 0 */
    const float *sigma;    /* (n_bars) EWMA volatility of log returns, span 20 */
    int n_bars;
    int n_segments;        /* 0 or 1: one segment; else segment_ends has n_segments */
    const int *segment_ends; /* (n_segments) increasing, last == n_bars; segment k is
                                [segment_ends[k-1] (0 for k = 0), segment_ends[k]) */
} fh_env_market;

/* Triple-barrier state: SPEC's 5 floats. direction 0 = no position. */
typedef struct fh_barrier {
    float entry;      /* entry price P0 */
    float upper;      /* long: profit-take level; short: stop-loss level */
    float lower;      /* long: stop-loss level; short: profit-take level */
    float entry_step; /* episode step at which the position was opened */
    float direction;  /* +1 long, -1 short, 0 inactive */
} fh_barrier;

/* The last FH_DIVERSITY_WINDOW actions and how often each occurs among them. */
typedef struct fh_diversity {
    unsigned char ring[FH_DIVERSITY_WINDOW];  /* actions, oldest at head once full */
    unsigned char counts[FH_N_ACTIONS];       /* occurrences in the ring (<= 100) */
    unsigned char pad_[3];
    int head;                                 /* next slot to write */
    int fill;                                 /* actions in the ring, <= W */
    double clogc;                             /* sum over actions of c ln c (c = count),
                                                 kept up to date so the entropy costs a
                                                 few logs per step, not one per action;
                                                 double, so adding and later removing the
                                                 same float terms leaves no drift */
} fh_diversity;

/* Everything one episode carries across steps and across kernel launches. */
typedef struct fh_episode_state {
    fh_rng rng;
    /* portfolio, double: equity == cash + units * close[bar] */
    double cash;
    double units;          /* signed units of the asset held */
    double equity;         /* marked at close[bar] */
    double initial_equity;
    double exposure;       /* units * close[bar] / equity: drifts with the price */
    /* per-episode log accumulators (reset with the episode) */
    double log_reward;     /* sum of rewards (env_step's base + caller's bonuses) */
    double log_cost;       /* sum of transaction costs, in cash */
    double log_turnover;   /* sum of |exposure traded| */
    int bar;               /* current bar index in the market */
    int start_bar;
    int step;              /* steps taken in this episode */
    int log_reversals;
    int log_barrier_hits[FH_BARRIER_N_KINDS]; /* indexed by FH_BARRIER_*; [0] unused */
    int episodes_done;     /* episodes finished by this slot (not reset) */
    /* lifetime totals of the slot (never reset: the trainer differences them between
     * collections for its per-iteration metrics, on the CPU and GPU paths alike) */
    double life_cost;      /* transaction costs paid, in cash */
    double life_turnover;  /* sum of |exposure traded| */
    int life_reversals;
    int life_barrier_hits[FH_BARRIER_N_KINDS];
    int segment_end;       /* one past the last bar of the episode's segment (a market of
                              several assets); 0: the market's end (one segment) */
    fh_barrier barrier;
    fh_diversity diversity;
} fh_episode_state;

/* What one env_step did (SPEC §3 steps 1-4, 6-8). */
typedef struct fh_step_result {
    double pnl;            /* ln(E_{i+1} / E_i), costs included */
    double cost;           /* trade cost + barrier exit cost, in cash, >= 0 */
    double units_held;     /* units held over the price move (after the trade) */
    float reward;          /* reward_base; the caller adds curiosity with env_add_bonus */
    float reward_base;     /* all terms of SPEC §3.7 except the curiosity bonus */
    float turnover;        /* |e' - e| plus |exposure| closed by a barrier */
    float exposure;        /* e' after the trade (before any barrier exit) */
    float barrier_scale;
    float risk_penalty;
    float diversity_penalty;
    int barrier_hit;       /* FH_BARRIER_* */
    int reversal;          /* 1 when the trade flipped the position's sign */
    int terminal;          /* ruin */
    int truncated;         /* horizon or last bar of the split reached */
    int done;              /* terminal || truncated */
} fh_step_result;

#endif

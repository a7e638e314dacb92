/* common_device_functions.cuh — the trading environment, written once for the C
 * compiler and NVRTC (SPEC §3; issue 3; docs/ENVIRONMENT.md).
 *
 * The same text is shared by the PPO kernels and the CPU path: gcc compiles it as C11
 * (the CPU environment src/env/vec_env.c, the CPU collector and evaluation in src/rl,
 * the tests), NVRTC as C++17 device code, concatenated in front of the kernel file
 * (ppo_experience_kernel.cu, fast_kernels.cu; SPEC §8). A DQN experience kernel
 * (issue 18; none exists yet) would include it the same way. So it keeps to the common
 * subset: no system headers under NVRTC (only the public "foxhunt/shapes.h" and
 * "foxhunt/env_types.h", handed to NVRTC as named headers), no stdint types, no
 * malloc/printf, no designated initialisers, no bool, no enums (int constants convert
 * freely in both languages), no NULL. Every function carries FH_DEVICE.
 *
 * The plain types (fh_rng, fh_env_config, fh_env_market, fh_barrier, fh_diversity,
 * fh_episode_state, fh_step_result) and the barrier kinds are public:
 * include/foxhunt/env_types.h. The PPO network, sampling and GAE functions built on
 * this header: ppo_device_functions.cuh.
 *
 * Precision: the portfolio (cash, units, equity) is double so that
 * equity = cash + units * price holds to 1e-9 relative; the rest (features, rewards,
 * networks) is float. The RNG is integer-only, so CPU and GPU draw identical numbers;
 * float results agree up to rounding (the GPU may fuse multiply-adds, and its
 * expf/logf differ from glibc's by an ulp or two: SPEC §9 tolerances). */
#ifndef FOXHUNT_COMMON_DEVICE_FUNCTIONS_CUH
#define FOXHUNT_COMMON_DEVICE_FUNCTIONS_CUH

#include "foxhunt/env_types.h" /* the plain types; includes foxhunt/shapes.h */
#include "foxhunt/shapes.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FH_DEVICE __device__ __forceinline__
#else
#include <math.h>
#define FH_DEVICE static inline
#endif

/* ---- environment-only constants (sizes live in foxhunt/shapes.h) ---- */
#define FH_EXPOSURE_MIN (-1.0f)        /* x(a) = FH_EXPOSURE_MIN + FH_EXPOSURE_STEP * e */
#define FH_EXPOSURE_MAX 1.0f
#define FH_EXPOSURE_STEP 0.25f
#define FH_URGENCY_STEP 0.2f           /* u(a) = FH_URGENCY_STEP * (k + 1) */
/* The spread feature's cost rate uses the middle urgency (k = 2, u = 0.6). */
#define FH_OBS_URGENCY_INDEX (FH_N_URGENCIES / 2)
/* A barrier exit is a forced market order that closes the whole gap: full urgency. */
#define FH_BARRIER_EXIT_URGENCY_INDEX (FH_N_URGENCIES - 1)
#define FH_SPREAD_FEATURE_MAX 5.0f     /* spread feature clipped to [0, 5] (SPEC §3) */
#define FH_SIGMA_FLOOR 1e-6f           /* sigma below this (a flat price run) counts as this */
#define FH_DIVERSITY_TARGET_ENTROPY 1.0f /* penalty = -div_coef * max(0, 1 - H) (SPEC §3.4) */
#define FH_CURIOSITY_MSE_CAP 1.0f      /* bonus = cur_coef * min(mse, 1) (SPEC §3.5) */
/* |e'| at or below this is flat: the position is closed exactly (units = 0). */
#define FH_FLAT_EXPOSURE_EPS 1e-12
/* pnl = ln(max(E', floor) / E): a short squeezed through zero equity would give
 * ln(negative); the floor keeps pnl finite and the step is terminal (ruin) anyway. */
#define FH_EQUITY_FLOOR_FRACTION 1e-9

/* Activations for matvec_leaky_relu (use_leaky = 0 is ReLU, as the design note). */
#define FH_MATVEC_RELU 0
#define FH_MATVEC_LEAKY_RELU 1
#define FH_MATVEC_LINEAR 2

/* PCG32 (O'Neill 2014, XSH-RR 64/32): 64-bit LCG state, output permutation. */
#define FH_PCG_MULT 6364136223846793005ULL
#define FH_PCG_ROTATE_SHIFT 59u
#define FH_PCG_XSHIFT 18u
#define FH_PCG_OUT_SHIFT 27u
#define FH_RNG_FLOAT_BITS 24           /* gpu_random keeps the top 24 bits: exact in float */
#define FH_RNG_FLOAT_SCALE (1.0f / 16777216.0f) /* 2^-24 */

/* The types (fh_rng, fh_env_config, fh_episode_state, ...) and the barrier kinds
 * (FH_BARRIER_*) are in foxhunt/env_types.h. */

/* ---- random numbers ---- */

FH_DEVICE unsigned int pcg32(fh_rng *rng)
{
    unsigned long long old = rng->state;
    rng->state = old * FH_PCG_MULT + rng->inc;
    unsigned int xorshifted = (unsigned int)(((old >> FH_PCG_XSHIFT) ^ old) >> FH_PCG_OUT_SHIFT);
    unsigned int rot = (unsigned int)(old >> FH_PCG_ROTATE_SHIFT);
    return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
}

/* seed: the run seed; stream: the episode index (distinct streams never overlap). */
FH_DEVICE void rng_seed(fh_rng *rng, unsigned long long seed, unsigned long long stream)
{
    rng->state = 0ULL;
    rng->inc = (stream << 1) | 1ULL;
    pcg32(rng);
    rng->state += seed;
    pcg32(rng);
}

/* Uniform float in [0, 1): the top 24 bits times 2^-24, exact on CPU and GPU. */
FH_DEVICE float gpu_random(fh_rng *rng)
{
    return (float)(pcg32(rng) >> (32 - FH_RNG_FLOAT_BITS)) * FH_RNG_FLOAT_SCALE;
}

/* Integer in [0, n), n >= 1: multiply-shift (bias below n / 2^32). */
FH_DEVICE int rng_uniform_int(fh_rng *rng, int n)
{
    return (int)(((unsigned long long)pcg32(rng) * (unsigned long long)n) >> 32);
}

/* ---- small networks ---- */

/* argmax_k x[k], the lowest index on ties: the greedy action of logits or Q-values. */
FH_DEVICE int argmax_first(const float *x, int n)
{
    int best = 0;
    for (int k = 1; k < n; k++)
        if (x[k] > x[best])
            best = k;
    return best;
}

FH_DEVICE float leaky_relu(float x, float alpha)
{
    return x > 0.0f ? x : alpha * x;
}

/* out[o] = act(b[o] + sum_i W[o, i] * x[i]); W (n_out, n_in) row-major, b (n_out).
 * use_leaky: FH_MATVEC_RELU (0), FH_MATVEC_LEAKY_RELU (1) or FH_MATVEC_LINEAR (2). */
FH_DEVICE void matvec_leaky_relu(float *out, const float *W, const float *b, const float *x,
                                 int n_out, int n_in, int use_leaky, float alpha)
{
    for (int o = 0; o < n_out; o++) {
        const float *row = W + (long long)o * n_in;
        float sum = b[o];
        for (int i = 0; i < n_in; i++)
            sum += row[i] * x[i];
        if (use_leaky == FH_MATVEC_LEAKY_RELU)
            sum = leaky_relu(sum, alpha);
        else if (use_leaky == FH_MATVEC_RELU)
            sum = sum > 0.0f ? sum : 0.0f;
        out[o] = sum;
    }
}

/* Output layers: no activation. */
FH_DEVICE void matvec_linear(float *out, const float *W, const float *b, const float *x,
                             int n_out, int n_in)
{
    matvec_leaky_relu(out, W, b, x, n_out, n_in, FH_MATVEC_LINEAR, 0.0f);
}

/* ---- actions: a = FH_N_URGENCIES * e + k (SPEC §3) ---- */

FH_DEVICE float action_to_exposure(int a)
{
    return FH_EXPOSURE_MIN + FH_EXPOSURE_STEP * (float)(a / FH_N_URGENCIES);
}

FH_DEVICE float action_to_urgency(int a)
{
    return FH_URGENCY_STEP * (float)(a % FH_N_URGENCIES + 1);
}

/* Cost rate per unit of turnover: half_spread + impact * u(a). */
FH_DEVICE float action_to_tx_cost(int a, const fh_env_config *cfg)
{
    return cfg->half_spread + cfg->impact * action_to_urgency(a);
}

/* Rate of a barrier exit (full urgency) and of the spread feature (middle urgency). */
FH_DEVICE float env_exit_cost_rate(const fh_env_config *cfg)
{
    return action_to_tx_cost(FH_BARRIER_EXIT_URGENCY_INDEX, cfg);
}

FH_DEVICE float env_observed_cost_rate(const fh_env_config *cfg)
{
    return action_to_tx_cost(FH_OBS_URGENCY_INDEX, cfg);
}

/* ---- triple barrier (SPEC §3.3) ---- */

FH_DEVICE void barrier_reset(fh_barrier *b)
{
    b->entry = 0.0f;
    b->upper = 0.0f;
    b->lower = 0.0f;
    b->entry_step = 0.0f;
    b->direction = 0.0f;
}

/* Opens barriers for a position of sign direction (+1 / -1) entered at entry_price,
 * with the bar's sigma (floored at FH_SIGMA_FLOOR). Long: upper = P0 (1 + pt sigma)
 * is the profit-take, lower = P0 (1 - sl sigma) the stop-loss; short: mirrored,
 * lower = P0 (1 - pt sigma) profit-take, upper = P0 (1 + sl sigma) stop-loss. */
FH_DEVICE void barrier_init(fh_barrier *b, float entry_price, float sigma, int entry_step,
                            int direction, const fh_env_config *cfg)
{
    float s = fmaxf(sigma, FH_SIGMA_FLOOR);
    b->entry = entry_price;
    b->entry_step = (float)entry_step;
    if (direction > 0) {
        b->direction = 1.0f;
        b->upper = entry_price * (1.0f + cfg->pt * s);
        b->lower = entry_price * (1.0f - cfg->sl * s);
    } else {
        b->direction = -1.0f;
        b->upper = entry_price * (1.0f + cfg->sl * s);
        b->lower = entry_price * (1.0f - cfg->pt * s);
    }
}

/* Checks price (the close the market just moved to) after `steps_done` episode steps.
 * Profit-take and stop-loss (touching the level counts) before the time limit, which
 * hits once steps_done - entry_step >= max_hold (max_hold 0: never). Returns
 * FH_BARRIER_*; always FH_BARRIER_NONE under barrier_mode off. */
FH_DEVICE int barrier_check(const fh_barrier *b, float price, int steps_done,
                            const fh_env_config *cfg)
{
    if (b->direction == 0.0f || cfg->barrier_mode == FH_BARRIER_MODE_OFF)
        return FH_BARRIER_NONE;
    if (b->direction > 0.0f) {
        if (price >= b->upper)
            return FH_BARRIER_PROFIT_TAKE;
        if (price <= b->lower)
            return FH_BARRIER_STOP_LOSS;
    } else {
        if (price <= b->lower)
            return FH_BARRIER_PROFIT_TAKE;
        if (price >= b->upper)
            return FH_BARRIER_STOP_LOSS;
    }
    if (cfg->max_hold > 0 && (float)steps_done - b->entry_step >= (float)cfg->max_hold)
        return FH_BARRIER_TIME_LIMIT;
    return FH_BARRIER_NONE;
}

FH_DEVICE float barrier_scale_of(int hit, const fh_env_config *cfg)
{
    if (hit == FH_BARRIER_PROFIT_TAKE)
        return cfg->pt_bonus;
    if (hit == FH_BARRIER_STOP_LOSS)
        return cfg->sl_scale;
    return 0.0f;
}

/* ---- diversity (SPEC §3.4) ---- */

FH_DEVICE void diversity_reset(fh_diversity *d)
{
    for (int i = 0; i < FH_DIVERSITY_WINDOW; i++)
        d->ring[i] = 0;
    for (int i = 0; i < FH_N_ACTIONS; i++)
        d->counts[i] = 0;
    for (int i = 0; i < 3; i++)
        d->pad_[i] = 0;
    d->head = 0;
    d->fill = 0;
    d->clogc = 0.0;
}

/* c ln c, 0 for c <= 1 */
FH_DEVICE float diversity_clogc(int c)
{
    return c > 1 ? (float)c * logf((float)c) : 0.0f;
}

/* Pushes action into the ring (evicting the oldest once full), then returns the
 * penalty -div_coef * max(0, 1 - H), H = -sum p ln p over the filled part, or 0 while
 * fewer than FH_DIVERSITY_MIN_FILL actions are in the window. With p = c / F:
 * H = ln F - (1/F) sum c ln c, and the sum changes only for the evicted and the
 * pushed action, so it is updated in place (diversity_clogc). */
FH_DEVICE float diversity_entropy(fh_diversity *d, int action, const fh_env_config *cfg)
{
    if (d->fill == FH_DIVERSITY_WINDOW) {
        int old = d->ring[d->head];
        d->clogc += (double)diversity_clogc(d->counts[old] - 1) - (double)diversity_clogc(d->counts[old]);
        d->counts[old]--;
    } else {
        d->fill++;
    }
    d->ring[d->head] = (unsigned char)action;
    d->clogc += (double)diversity_clogc(d->counts[action] + 1) - (double)diversity_clogc(d->counts[action]);
    d->counts[action]++;
    d->head = (d->head + 1) % FH_DIVERSITY_WINDOW;
    if (d->fill < FH_DIVERSITY_MIN_FILL)
        return 0.0f;
    float h = logf((float)d->fill) - (float)(d->clogc / (double)d->fill);
    return -cfg->div_coef * fmaxf(0.0f, FH_DIVERSITY_TARGET_ENTROPY - h);
}

/* ---- curiosity (SPEC §3.5) ---- */

/* Forward model [s[0..31], x(a), u(a), e'] (35) -> 64 ReLU -> 32; returns the MSE of its
 * prediction against next_features (the next bar's market features 0..31).
 * weights: flat buffer, layout FH_CURIOSITY_OFF_* (foxhunt/shapes.h); state: (54). */
FH_DEVICE float curiosity_inference(const float *weights, const float *state, int action,
                                    float new_exposure, const float *next_features)
{
    float in[FH_CURIOSITY_INPUT_DIM];
    float hidden[FH_CURIOSITY_HIDDEN];
    float pred[FH_CURIOSITY_TARGET_DIM];
    for (int i = 0; i < FH_CURIOSITY_TARGET_DIM; i++)
        in[i] = state[i];
    in[FH_CURIOSITY_TARGET_DIM] = action_to_exposure(action);
    in[FH_CURIOSITY_TARGET_DIM + 1] = action_to_urgency(action);
    in[FH_CURIOSITY_TARGET_DIM + 2] = new_exposure;
    matvec_leaky_relu(hidden, weights + FH_CURIOSITY_OFF_W0, weights + FH_CURIOSITY_OFF_B0,
                      in, FH_CURIOSITY_HIDDEN, FH_CURIOSITY_INPUT_DIM, FH_MATVEC_RELU, 0.0f);
    matvec_linear(pred, weights + FH_CURIOSITY_OFF_W1, weights + FH_CURIOSITY_OFF_B1, hidden,
                  FH_CURIOSITY_TARGET_DIM, FH_CURIOSITY_HIDDEN);
    float sum = 0.0f;
    for (int i = 0; i < FH_CURIOSITY_TARGET_DIM; i++) {
        float d = pred[i] - next_features[i];
        sum += d * d;
    }
    return sum / (float)FH_CURIOSITY_TARGET_DIM;
}

FH_DEVICE float curiosity_bonus(const fh_env_config *cfg, float mse)
{
    return cfg->cur_coef * fminf(mse, FH_CURIOSITY_MSE_CAP);
}

/* ---- the episode ---- */

/* Valid start bars of a segment [begin, end): its first end - 1 - horizon - begin + 1
 * bars when it holds a full horizon after them (only the horizon truncates), else its
 * first end - begin - 1 (at least one step; the segment's end truncates). */
FH_DEVICE int env_segment_starts(const fh_env_config *cfg, int begin, int end)
{
    int last_start = end - 1 - cfg->horizon - begin;
    if (last_start < 0)
        last_start = end - begin - 2;
    return last_start + 1;
}

/* Start bar: uniform over the valid starts (env_segment_starts) of all segments, so a
 * segment is drawn in proportion to its starts (an asset by its bars). One segment:
 * uniform in [0, n_bars - 1 - horizon], or [0, n_bars - 2] when the data is shorter
 * than a horizon. One draw either way, so one segment draws as before segments were.
 * Requires n_bars >= 2 and every segment >= 2 bars. */
FH_DEVICE int env_sample_start_bar(const fh_env_config *cfg, const fh_env_market *m,
                                   fh_rng *rng)
{
    if (m->n_segments <= 1)
        return rng_uniform_int(rng, env_segment_starts(cfg, 0, m->n_bars));
    int total = 0;
    for (int k = 0, begin = 0; k < m->n_segments; begin = m->segment_ends[k], k++)
        total += env_segment_starts(cfg, begin, m->segment_ends[k]);
    int r = rng_uniform_int(rng, total);
    int begin = 0;
    for (int k = 0; k < m->n_segments - 1; begin = m->segment_ends[k], k++) {
        int c = env_segment_starts(cfg, begin, m->segment_ends[k]);
        if (r < c)
            return begin + r;
        r -= c;
    }
    return begin + r;
}

/* One past the last bar of the segment that holds `bar`; 0 for a one-segment market
 * (the episode then ends at the market's end, as before segments were). */
FH_DEVICE int env_segment_end_of(const fh_env_market *m, int bar)
{
    if (m->n_segments <= 1)
        return 0;
    for (int k = 0; k < m->n_segments - 1; k++)
        if (bar < m->segment_ends[k])
            return m->segment_ends[k];
    return m->segment_ends[m->n_segments - 1];
}

/* The bar count a step of ep sees: its segment's end (env_step_move truncates at its
 * last bar and never reads past it). */
FH_DEVICE int env_episode_end(const fh_env_market *m, const fh_episode_state *ep)
{
    return ep->segment_end > 0 ? ep->segment_end : m->n_bars;
}

/* An episode's reset in two parts, for a kernel that splits a step between the warp
 * that moves the portfolio (env_step_move) and one that keeps the books
 * (env_step_book): env_episode_reset_move draws the new random start bar (the rng
 * continues its stream) and opens a fresh portfolio and barriers; env_episode_reset_book
 * empties the per-episode logs and the diversity window (*div), and sets the initial
 * equity as well, which a book-keeper's own copy needs for the log-return floor. */
FH_DEVICE void env_episode_reset_move(const fh_env_config *cfg, const fh_env_market *m,
                                      fh_episode_state *ep)
{
    ep->start_bar = env_sample_start_bar(cfg, m, &ep->rng);
    ep->segment_end = env_segment_end_of(m, ep->start_bar);
    ep->bar = ep->start_bar;
    ep->step = 0;
    ep->initial_equity = cfg->initial_equity;
    ep->cash = cfg->initial_equity;
    ep->units = 0.0;
    ep->equity = cfg->initial_equity;
    ep->exposure = 0.0;
    barrier_reset(&ep->barrier);
}

FH_DEVICE void env_episode_reset_book(const fh_env_config *cfg, fh_episode_state *ep,
                                      fh_diversity *div)
{
    ep->initial_equity = cfg->initial_equity; /* env_step_book's floor reads it too */
    ep->log_reward = 0.0;
    ep->log_cost = 0.0;
    ep->log_turnover = 0.0;
    ep->log_reversals = 0;
    for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
        ep->log_barrier_hits[k] = 0;
    diversity_reset(div);
}

/* Fresh portfolio, barriers, diversity window (*div) and logs at a new random start
 * bar. env_episode_reset below is the usual form; this one takes the diversity window
 * apart from ep, as env_step_at_div does. */
FH_DEVICE void env_episode_reset_div(const fh_env_config *cfg, const fh_env_market *m,
                                     fh_episode_state *ep, fh_diversity *div)
{
    env_episode_reset_move(cfg, m, ep);
    env_episode_reset_book(cfg, ep, div);
}

FH_DEVICE void env_episode_reset(const fh_env_config *cfg, const fh_env_market *m,
                                 fh_episode_state *ep)
{
    env_episode_reset_div(cfg, m, ep, &ep->diversity);
}

/* The fields env_step_move, env_episode_reset_move and the kernels' episode count
 * change (everything but the book-keeping fields and the diversity window): src's into
 * dst. With env_copy_book and the window, a whole fh_episode_state. */
FH_DEVICE void env_copy_move(fh_episode_state *dst, const fh_episode_state *src)
{
    dst->rng = src->rng;
    dst->cash = src->cash;
    dst->units = src->units;
    dst->equity = src->equity;
    dst->initial_equity = src->initial_equity;
    dst->exposure = src->exposure;
    dst->bar = src->bar;
    dst->start_bar = src->start_bar;
    dst->step = src->step;
    dst->episodes_done = src->episodes_done;
    dst->segment_end = src->segment_end;
    dst->barrier = src->barrier;
}

/* The book-keeping fields of an episode (what env_step_book and env_episode_reset_book
 * change, besides the diversity window): src's into dst. */
FH_DEVICE void env_copy_book(fh_episode_state *dst, const fh_episode_state *src)
{
    dst->log_reward = src->log_reward;
    dst->log_cost = src->log_cost;
    dst->log_turnover = src->log_turnover;
    dst->log_reversals = src->log_reversals;
    dst->life_cost = src->life_cost;
    dst->life_turnover = src->life_turnover;
    dst->life_reversals = src->life_reversals;
    for (int k = 0; k < FH_BARRIER_N_KINDS; k++) {
        dst->log_barrier_hits[k] = src->log_barrier_hits[k];
        dst->life_barrier_hits[k] = src->life_barrier_hits[k];
    }
}

/* First reset of slot `stream` (the episode index) under the run seed. */
FH_DEVICE void env_episode_init(const fh_env_config *cfg, const fh_env_market *m,
                                fh_episode_state *ep, unsigned long long seed,
                                unsigned long long stream)
{
    rng_seed(&ep->rng, seed, stream);
    ep->episodes_done = 0;
    ep->life_cost = 0.0;
    ep->life_turnover = 0.0;
    ep->life_reversals = 0;
    for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
        ep->life_barrier_hits[k] = 0;
    env_episode_reset(cfg, m, ep);
}

/* state (FH_STATE_DIM): the 51 features of the current bar, equity/initial - 1,
 * exposure clipped to [-1, 1], and spread = (half_spread + impact * 0.6) / max(sigma,
 * FH_SIGMA_FLOOR) clipped to [0, 5]. */
/* The 3 portfolio features of the observation (state[51..53]) given the bar's sigma;
 * split out so that a kernel whose lanes load the bar ahead of time computes these
 * with the same code. */
FH_DEVICE void env_portfolio_features_at(const fh_env_config *cfg, const fh_episode_state *ep,
                                         float sigma, float *out3)
{
    float exposure = (float)ep->exposure;
    float spread = env_observed_cost_rate(cfg) / fmaxf(sigma, FH_SIGMA_FLOOR);
    out3[0] = (float)(ep->equity / ep->initial_equity - 1.0);
    out3[1] = fminf(fmaxf(exposure, FH_EXPOSURE_MIN), FH_EXPOSURE_MAX);
    out3[2] = fminf(fmaxf(spread, 0.0f), FH_SPREAD_FEATURE_MAX);
}

FH_DEVICE void env_portfolio_features(const fh_env_config *cfg, const fh_env_market *m,
                                      const fh_episode_state *ep, float *out3)
{
    env_portfolio_features_at(cfg, ep, m->sigma[ep->bar], out3);
}

FH_DEVICE void env_observe(const fh_env_config *cfg, const fh_env_market *m,
                           const fh_episode_state *ep, float *state)
{
    const float *f = m->features + (long long)ep->bar * FH_N_MARKET_FEATURES;
    for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
        state[j] = f[j];
    env_portfolio_features(cfg, m, ep, state + FH_N_MARKET_FEATURES);
}

#include "obs_noise.cuh" /* env_observe_train: training observations with noise */

FH_DEVICE int env_sign(double v)
{
    return (v > 0.0) - (v < 0.0);
}

/* What env_step reads from the market at bar i: close[i], close[i + 1] (close[i] at the
 * last bar, where env_step does not move) and sigma[i]. A kernel can load these ahead
 * of time (with the next bar's features) and call env_step_at. */
typedef struct fh_bar_prices {
    float close;
    float next_close;
    float sigma;
} fh_bar_prices;

FH_DEVICE fh_bar_prices env_bar_prices(const fh_env_market *m, int bar)
{
    fh_bar_prices px;
    px.close = m->close[bar];
    px.next_close = m->close[bar + 1 < m->n_bars ? bar + 1 : bar];
    px.sigma = m->sigma[bar];
    return px;
}

/* What env_step_move hands to env_step_book: the step's trade, price move and barrier
 * outcome. */
typedef struct fh_step_move {
    double equity0;    /* before the trade, at p_i */
    double equity1;    /* after the move and any barrier exit, at p_{i+1} */
    double cost;       /* trade and barrier exit, in cash */
    double turnover;   /* |e' - e| plus |exposure| closed by a barrier */
    double e_new;      /* exposure after the trade (before any barrier exit) */
    double units_held; /* units held over the move */
    float sigma;       /* sigma_i */
    int hit;           /* FH_BARRIER_* */
    int reversal;
    int terminal;
    int truncated;
    int moved;         /* 0: stepped past the data without a reset; nothing moved */
} fh_step_move;

/* One step at bar i = ep->bar with `action` (0 <= action < FH_N_ACTIONS), given that
 * bar's prices (env_bar_prices) and the market's length, in two parts.
 * env_step_move: SPEC §3 steps 1-3 and 8 — the trade, the price move, the barriers and
 * the done flags; it changes ep's portfolio, barriers, bar and step, all that the next
 * observation and step read. env_step_book: steps 4, 6 and 7 (without the curiosity
 * bonus) — diversity, risk, log return and reward — into *out, and ep's per-episode
 * and lifetime logs; nothing the next step reads. env_step_at_div runs both; a GPU
 * kernel may run the second on another warp while the first goes on to the next step
 * (docs/ENVIRONMENT.md). Neither resets: on done the caller observes the final state,
 * then calls env_episode_reset. */
FH_DEVICE void env_step_move(const fh_env_config *cfg, int n_bars, fh_episode_state *ep, int action,
                             const fh_bar_prices *px, fh_step_move *mv)
{
    int i = ep->bar;
    mv->units_held = ep->units;
    mv->e_new = ep->exposure;
    mv->cost = 0.0;
    mv->turnover = 0.0;
    mv->sigma = px->sigma;
    mv->hit = FH_BARRIER_NONE;
    mv->reversal = 0;
    mv->terminal = 0;
    if (i + 1 >= n_bars) { /* stepped past the data without a reset: nothing moves */
        mv->equity0 = mv->equity1 = ep->equity;
        mv->truncated = 1;
        mv->moved = 0;
        return;
    }
    mv->moved = 1;

    double p0 = (double)px->close;
    double p1 = (double)px->next_close;
    float sigma_i = px->sigma;
    double equity0 = ep->cash + ep->units * p0;

    /* 1. trade towards the target; cost = turnover * equity * rate, paid in cash */
    double e = ep->units * p0 / equity0;
    double x = (double)action_to_exposure(action);
    double u = (double)action_to_urgency(action);
    double e_new = e + u * (x - e);
    e_new = e_new > (double)FH_EXPOSURE_MAX ? (double)FH_EXPOSURE_MAX : e_new;
    e_new = e_new < (double)FH_EXPOSURE_MIN ? (double)FH_EXPOSURE_MIN : e_new;
    if (e_new <= FH_FLAT_EXPOSURE_EPS && e_new >= -FH_FLAT_EXPOSURE_EPS)
        e_new = 0.0;
    double turnover = e_new - e >= 0.0 ? e_new - e : e - e_new;
    double cost = turnover * equity0 * (double)action_to_tx_cost(action, cfg);
    double units_new = e_new * (equity0 - cost) / p0; /* exposure e' after the cost */
    ep->cash -= (units_new - ep->units) * p0 + cost;
    ep->units = units_new;

    int old_dir = (int)ep->barrier.direction;
    int new_dir = env_sign(e_new);
    int reversal = old_dir != 0 && new_dir != 0 && new_dir != old_dir;
    if (new_dir == 0)
        barrier_reset(&ep->barrier);
    else if (old_dir == 0 || reversal)
        barrier_init(&ep->barrier, (float)p0, sigma_i, ep->step, new_dir, cfg);

    /* 2. the market moves to p_{i+1} */
    mv->units_held = ep->units;
    double equity1 = ep->cash + ep->units * p1;

    /* 3. barriers, checked at p_{i+1}; a hit closes at p_{i+1} at full urgency, or,
     * under barrier_mode reward, leaves the position and re-arms the barriers around
     * p_{i+1} with this step's sigma (the hit still scales its reward in env_step_book) */
    int hit = barrier_check(&ep->barrier, (float)p1, ep->step + 1, cfg);
    if (hit != FH_BARRIER_NONE && cfg->barrier_mode == FH_BARRIER_MODE_REWARD) {
        barrier_init(&ep->barrier, (float)p1, sigma_i, ep->step + 1,
                     (int)ep->barrier.direction, cfg);
    } else if (hit != FH_BARRIER_NONE) {
        double value = ep->units * p1;
        double traded = value >= 0.0 ? value : -value;
        double exit_cost = traded * (double)env_exit_cost_rate(cfg);
        ep->cash += value - exit_cost;
        ep->units = 0.0;
        equity1 = ep->cash;
        cost += exit_cost;
        turnover += equity1 + exit_cost > 0.0 ? traded / (equity1 + exit_cost) : 0.0;
        barrier_reset(&ep->barrier);
    }
    ep->equity = equity1;
    ep->exposure = equity1 > 0.0 ? ep->units * p1 / equity1 : 0.0;
    ep->bar = i + 1;
    ep->step += 1;

    /* 8. done: ruin is terminal; the horizon or the last bar truncates */
    int terminal = equity1 < (double)cfg->ruin * ep->initial_equity;
    mv->truncated = !terminal && (ep->step >= cfg->horizon || ep->bar >= n_bars - 1);
    mv->terminal = terminal;
    mv->equity0 = equity0;
    mv->equity1 = equity1;
    mv->cost = cost;
    mv->turnover = turnover;
    mv->e_new = e_new;
    mv->hit = hit;
    mv->reversal = reversal;
}

/* Diversity (its window *div), risk, log return and reward of a moved step; ep's logs.
 * ep here needs only initial_equity and the logs (a book-keeping warp's copy). */
FH_DEVICE void env_step_book(const fh_env_config *cfg, fh_episode_state *ep, fh_diversity *div,
                             int action, const fh_step_move *mv, fh_step_result *out)
{
    out->pnl = 0.0;
    out->cost = 0.0;
    out->units_held = mv->units_held;
    out->reward = 0.0f;
    out->reward_base = 0.0f;
    out->turnover = 0.0f;
    out->exposure = (float)mv->e_new;
    out->barrier_scale = 0.0f;
    out->risk_penalty = 0.0f;
    out->diversity_penalty = 0.0f;
    out->barrier_hit = FH_BARRIER_NONE;
    out->reversal = 0;
    out->terminal = 0;
    out->truncated = mv->truncated;
    out->done = 1;
    if (!mv->moved)
        return;

    /* 6. risk on the position carried over the move */
    float risk_term = (float)mv->e_new * mv->sigma;
    float risk = cfg->risk_coef * risk_term * risk_term;
    double equity_floor = FH_EQUITY_FLOOR_FRACTION * ep->initial_equity;
    double pnl = log((mv->equity1 > equity_floor ? mv->equity1 : equity_floor) / mv->equity0);

    /* 4. diversity */
    float div_penalty = diversity_entropy(div, action, cfg);

    /* 7. reward without curiosity; with a turnover penalty (issue 34 item 3: cost
     * awareness beyond the costs the log return already pays), that too; the branch
     * keeps the expression of a run without one exactly as it was */
    int hit = mv->hit;
    float scale = barrier_scale_of(hit, cfg);
    float reward = cfg->reward_scale * ((float)pnl * (1.0f + scale) - risk) + div_penalty;
    if (cfg->turnover_penalty != 0.0f)
        reward -= cfg->reward_scale * cfg->turnover_penalty * (float)mv->turnover;

    ep->log_reward += (double)reward;
    ep->log_cost += mv->cost;
    ep->log_turnover += mv->turnover;
    ep->log_reversals += mv->reversal;
    ep->life_cost += mv->cost;
    ep->life_turnover += mv->turnover;
    ep->life_reversals += mv->reversal;
    for (int k = FH_BARRIER_NONE + 1; k < FH_BARRIER_N_KINDS; k++) { /* constant indices */
        ep->log_barrier_hits[k] += hit == k;
        ep->life_barrier_hits[k] += hit == k;
    }

    out->pnl = pnl;
    out->cost = mv->cost;
    out->reward = reward;
    out->reward_base = reward;
    out->turnover = (float)mv->turnover;
    out->barrier_scale = scale;
    out->risk_penalty = risk;
    out->diversity_penalty = div_penalty;
    out->barrier_hit = hit;
    out->reversal = mv->reversal;
    out->terminal = mv->terminal;
    out->done = mv->terminal || mv->truncated;
}

/* The whole step: env_step_move, then env_step_book on the same episode; the diversity
 * window is *div (normally &ep->diversity: env_step_at below; a GPU kernel keeps it in
 * shared memory instead, so that nothing in ep is indexed at run time and the compiler
 * can hold ep's scalars in registers). */
FH_DEVICE void env_step_at_div(const fh_env_config *cfg, int n_bars, fh_episode_state *ep,
                               fh_diversity *div, int action, const fh_bar_prices *px,
                               fh_step_result *out)
{
    fh_step_move mv;
    env_step_move(cfg, n_bars, ep, action, px, &mv);
    env_step_book(cfg, ep, div, action, &mv, out);
}

FH_DEVICE void env_step_at(const fh_env_config *cfg, int n_bars, fh_episode_state *ep, int action,
                           const fh_bar_prices *px, fh_step_result *out)
{
    env_step_at_div(cfg, n_bars, ep, &ep->diversity, action, px, out);
}

/* env_step_at with the prices read from the market. */
FH_DEVICE void env_step(const fh_env_config *cfg, const fh_env_market *m, fh_episode_state *ep,
                        int action, fh_step_result *out)
{
    fh_bar_prices px = env_bar_prices(m, ep->bar);
    env_step_at(cfg, env_episode_end(m, ep), ep, action, &px, out);
}

/* Adds a bonus the caller computed (the curiosity bonus) to the step's reward and to
 * the episode's logged return. */
FH_DEVICE void env_add_bonus(fh_episode_state *ep, fh_step_result *out, float bonus)
{
    out->reward += bonus;
    ep->log_reward += (double)bonus;
}

#endif

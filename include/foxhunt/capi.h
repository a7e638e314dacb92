/* capi.h — the small, stable C API of libfoxhunt, for Python (python/foxhunt, ctypes)
 * and any other language that can call C (issue 21; docs/PYTHON.md).
 *
 * Why a separate API: the library's own headers (env.h, checkpoint.h, ...) expose
 * structs whose layout changes as foxhunt grows; a binding that mirrored them would
 * break silently. This API keeps to:
 *   - opaque handles (fh_api_config, fh_api_market, fh_api_vec_env, fh_api_tensors,
 *     fh_api_eval, fh_api_gpu_collector), each created by one call and freed by its
 *     _free (NULL is fine); a handle owns everything it returns pointers to;
 *   - plain C types: int, int32_t, int64_t, uint64_t, double, float, char strings, and
 *     caller-owned arrays whose shapes are given in each comment, row-major;
 *   - one documented struct, fh_api_episode_log (below), which a binding mirrors
 *     (fh_api_episode_log_size() lets it check the size it assumed).
 *
 * Errors. Every call that can fail returns an int status: FH_API_OK (0),
 * FH_API_FAILURE (1: internal, system or device failure) or FH_API_INPUT (2: bad input,
 * e.g. a file, a value, an array size). The message ("what is wrong; what to do") is:
 *   - for a constructor (returns NULL on failure): written into the caller's buffer
 *     err (err_cap bytes, always NUL-terminated; err may be NULL);
 *   - for a call on a handle: fh_api_last_error(handle), valid until the next call on
 *     that handle. A NULL or freed handle, or a handle of another kind, is refused with
 *     FH_API_INPUT (its message then is fh_api_last_error(NULL)'s fixed text).
 * Every entry checks its arguments (NULL pointers, sizes, names, ranges, and floats:
 * NaN and infinity are refused wherever a value is taken) and returns an error rather
 * than crash; arrays are trusted to hold the sizes the comments give.
 *
 * Strings are NUL-terminated UTF-8, so the library cannot see past a NUL: a binding
 * must refuse text holding one (a tensor name "a\0b" would otherwise be stored as "a",
 * a path "run\0x" open "run"), as the Python package does (issue 32). Files the
 * library reads are checked for it themselves: a \u0000 in a safetensors header or a
 * saved config is refused.
 *
 * Threads. A handle is not safe to use from two threads at once; different handles
 * are independent. Calls do not print and never exit. */
#ifndef FOXHUNT_CAPI_H
#define FOXHUNT_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API: a binding refuses a library whose major version differs. */
#define FH_API_VERSION_MAJOR 1
#define FH_API_VERSION_MINOR 2 /* 1: fh_api_size; 2: vec env threads, the trainer */

#define FH_API_OK 0
#define FH_API_FAILURE 1
#define FH_API_INPUT 2

/* Sizes (foxhunt/shapes.h): observation, actions, market features, for C callers
 * compiled against this header; the library checks at its build that they are its own
 * sizes. A binding asks the library instead: fh_api_size. */
#define FH_API_STATE_DIM 54
#define FH_API_N_ACTIONS 45
#define FH_API_N_FEATURES 51

/* FH_API_VERSION_MAJOR * 1000 + FH_API_VERSION_MINOR of the library loaded. */
int fh_api_version(void);
/* "foxhunt 0.1.0 (Release, CUDA 1)": the library's version, build type and whether it
 * was built with the CUDA toolkit. Static string. */
const char *fh_api_build_info(void);
/* One of the library's sizes (foxhunt/shapes.h) by name: "state_dim" (54),
 * "n_actions" (45), "n_features" (51, the market features), "n_portfolio_features"
 * (3), "n_exposures" (9), "n_urgencies" (5); -1 for NULL or an unknown name. */
int fh_api_size(const char *name);
/* The last error of a call on handle (any kind), "" after a success. NULL or an
 * invalid handle: a fixed text saying the handle was invalid. */
const char *fh_api_last_error(const void *handle);

/* ---- configuration: every key of `foxhunt train` (train_config.h's table) ----
 * Keys are the INI/JSON keys ("horizon", "synthetic_bars", "data", ...), optionally
 * prefixed by their section ("env.horizon"); values are text, checked exactly as the
 * CLI checks a flag's value (range, choices). */
typedef struct fh_api_config fh_api_config;

/* The defaults of `foxhunt train`. NULL only when out of memory. */
fh_api_config *fh_api_config_new(char *err, size_t err_cap);
/* The resolved configuration stored in a checkpoint (what `foxhunt eval` uses). */
fh_api_config *fh_api_config_from_checkpoint(const char *path, char *err, size_t err_cap);
/* A configuration from the JSON `foxhunt train` writes (config.json, a checkpoint's
 * "config" metadata); keys absent from it keep their defaults. */
fh_api_config *fh_api_config_from_json(const char *json, char *err, size_t err_cap);
void fh_api_config_free(fh_api_config *cfg);
int fh_api_config_set(fh_api_config *cfg, const char *key, const char *value);
/* The value as text into out (cap bytes). */
int fh_api_config_get(fh_api_config *cfg, const char *key, char *out, size_t cap);
/* The resolved configuration as JSON into out (cap bytes). *len (may be NULL) gets its
 * length; when cap is too small FH_API_INPUT and *len says how much is needed. */
int fh_api_config_to_json(fh_api_config *cfg, char *out, size_t cap, size_t *len);
/* Reads an INI file (`foxhunt train --config`'s format) onto cfg: its keys override;
 * nothing changes unless the whole file is good (FH_API_INPUT naming file:line). */
int fh_api_config_load_ini(fh_api_config *cfg, const char *path);
/* Cross-field checks (fh_train_config_validate). */
int fh_api_config_validate(fh_api_config *cfg);
/* The table of keys: count, then each key's name, section ("run", "ppo", "q", "env")
 * and help text (static strings; NULL outside [0, count)). */
int fh_api_config_key_count(void);
const char *fh_api_config_key_name(int i);
const char *fh_api_config_key_section(int i);
const char *fh_api_config_key_help(int i);

/* ---- market data: bars, the 51 features, normalisation, splits ----
 * Built exactly as `foxhunt train` builds its data from the same configuration
 * (fh_run_data_load): the CSV of "data", or the synthetic market of "synthetic_seed" and
 * "synthetic_bars"; features, sigma, the warm-up dropped, the splits of
 * "train_fraction", "validation_fraction", "split_gap" and the walk-forward keys, the
 * z-score fitted on the training split (or the given statistics) and clipped. */
typedef struct fh_api_market fh_api_market;

/* norm_mean, norm_std (51 each): the statistics to apply (a checkpoint's norm.mean and
 * norm.std), or both NULL to fit them on the training split. cfg is copied. */
fh_api_market *fh_api_market_load(const fh_api_config *cfg, const float *norm_mean,
                                  const float *norm_std, char *err, size_t err_cap);
/* Frees the handle; vector envs made from it keep the data alive until they are freed. */
void fh_api_market_free(fh_api_market *m);
/* "synthetic market (seed 42, 20000 bars)" or the CSV path; static while m lives. */
const char *fh_api_market_description(const fh_api_market *m);
/* Raw bars (as loaded, before the warm-up is dropped) and rows after it; -1 on an
 * invalid handle. */
int64_t fh_api_market_bar_count(const fh_api_market *m);
int64_t fh_api_market_row_count(const fh_api_market *m);
/* The raw bars (bar_count each; any NULL is skipped). */
int fh_api_market_bars(fh_api_market *m, int64_t *time, double *open, double *high,
                       double *low, double *close, double *volume);
/* The rows the environment reads (row_count; any NULL skipped): features (rows, 51)
 * normalised and clipped, close and sigma (rows), time (rows), expected_return (rows,
 * the synthetic market's oracle signal; FH_API_INPUT for a CSV market). Row i is bar
 * i + 200 (the feature warm-up, FH_FEATURE_WARMUP). */
int fh_api_market_rows(fh_api_market *m, float *features, float *close, float *sigma,
                       int64_t *time, double *expected_return);
/* The raw (unnormalised) features of every bar, (bar_count, 51), and sigma (bar_count;
 * may be NULL); rows below the warm-up are 0 (`foxhunt features` without --normalize). */
int fh_api_market_raw_features(fh_api_market *m, float *features, float *sigma);
/* The normalisation applied: mean and std (51 each). */
int fh_api_market_norm(fh_api_market *m, float *mean, float *std);
/* A split's rows [*begin, *end) ("train", "validation", "test", "all"); an absent
 * validation split is empty (begin == end). */
int fh_api_market_split(fh_api_market *m, const char *split, int64_t *begin, int64_t *end);
/* 1 when the market is the synthetic one, 0 a CSV, -1 an invalid handle. */
int fh_api_market_is_synthetic(const fh_api_market *m);
/* Name of feature i (0..50), NULL outside. */
const char *fh_api_feature_name(int i);

/* ---- the CPU vector environment: fh_vec_env (env.h, src/env/vec_env.c) wrapped ----
 * N episodes on one split of a market, stepped together with OpenMP; observations
 * (N, 54) float32, actions (N) int32 in [0, 45). A step resets a finished episode in
 * the same call (terminal: ruin; truncated: horizon or the split's last bar): obs
 * then holds the new episode's first observation and final_obs the last one of the
 * episode that ended (Gymnasium's "same-step" autoreset). */
typedef struct fh_api_vec_env fh_api_vec_env;

/* The environment coefficients ([env]) come from cfg, or from the market's
 * configuration when cfg is NULL. Slot i's random stream is seeded with (seed, i)
 * and every episode reset (fh_vec_env_init). split: "train", "validation", "test" or
 * "all". */
fh_api_vec_env *fh_api_vec_env_create(fh_api_market *m, const fh_api_config *cfg,
                                      const char *split, int n_episodes, uint64_t seed,
                                      char *err, size_t err_cap);
void fh_api_vec_env_free(fh_api_vec_env *e);
int fh_api_vec_env_size(const fh_api_vec_env *e); /* N, or -1 */
/* Seeds every slot again as create did (seed, i), resets every episode, clears the
 * finished-episode logs and writes obs (N, 54). */
int fh_api_vec_env_seed(fh_api_vec_env *e, uint64_t seed, float *obs);
/* Resets every episode from its slot's stream as it stands (fh_vec_env_reset): obs
 * (N, 54). */
int fh_api_vec_env_reset(fh_api_vec_env *e, float *obs);
/* The current observations (N, 54), nothing stepped. */
int fh_api_vec_env_observe(fh_api_vec_env *e, float *obs);
/* One step of every episode (fh_vec_env_step). actions (N) in [0, 45): FH_API_INPUT
 * naming the first bad one, nothing stepped. Outputs (N): rewards, terminations,
 * truncations (0/1 bytes); obs (N, 54) after the reset of finished episodes;
 * final_obs (N, 54) or NULL: the observation before that reset (rows of episodes that
 * did not finish equal obs). */
int fh_api_vec_env_step(fh_api_vec_env *e, const int32_t *actions, float *obs,
                        float *rewards, uint8_t *terminations, uint8_t *truncations,
                        float *final_obs);
/* The same, stepping only the slots whose active[i] (N bytes; NULL: all) is non-zero: a
 * held slot's obs (and final_obs) is its current observation, its reward 0, its flags 0;
 * its action is not read and its episode does not move (Gymnasium's next-step
 * autoreset holds a finished slot for one step). */
int fh_api_vec_env_step_active(fh_api_vec_env *e, const int32_t *actions,
                               const uint8_t *active, float *obs, float *rewards,
                               uint8_t *terminations, uint8_t *truncations, float *final_obs);
/* OpenMP threads of each step: 1 by default (a step of a few hundred episodes takes
 * microseconds, and a team of every core costs more than it saves, the more so on a busy
 * machine: docs/PYTHON.md measures it), n >= 1 threads, or 0 for OpenMP's default (every
 * core, or OMP_NUM_THREADS). Kept by fh_api_vec_env_seed. Results do not depend on it.
 * FH_API_INPUT outside [0, FH_API_MAX_THREADS]. */
#define FH_API_MAX_THREADS 1024
int fh_api_vec_env_set_threads(fh_api_vec_env *e, int n_threads);
int fh_api_vec_env_threads(const fh_api_vec_env *e); /* the count set, or -1 */
/* The curiosity model's params (flat, n = 4384, shapes.h's layout) whose bonus
 * (cur_coef x the model's error) is added to each reward, as in training; NULL: none
 * (the default). Copied. Every param must be finite: FH_API_INPUT names the first
 * other one (index and tensor) and the params set before stay. */
int fh_api_vec_env_set_curiosity(fh_api_vec_env *e, const float *params, int64_t n);
/* Each slot's equity, exposure (drifted), bar (index in the split) and step within the
 * episode (N each; any NULL skipped). */
int fh_api_vec_env_portfolio(fh_api_vec_env *e, double *equity, double *exposure,
                             int32_t *bar, int32_t *step);

/* The bounds of every observation (54 each): the 51 market features are z-scores
 * clipped to +-5; equity / initial - 1 lies in [-1, FLT_MAX]; the exposure in [-1, 1];
 * the spread feature in [0, 5]. */
int fh_api_observation_bounds(float *low, float *high);

/* One finished episode (fh_episode_log): 10 int32 then 5 double, 80 bytes, no padding. */
typedef struct {
    int32_t slot;            /* the episode's index in the vector env */
    int32_t start_bar;       /* first bar, in the split */
    int32_t length;          /* steps */
    int32_t terminal;        /* 1: ruin */
    int32_t truncated;       /* 1: horizon or end of the split */
    int32_t reversals;
    int32_t barrier_hits[4]; /* [0] unused, [1] profit-take, [2] stop-loss, [3] time */
    double episode_return;   /* sum of the rewards */
    double log_growth;       /* ln(final equity / initial equity) */
    double final_equity;
    double costs;            /* transaction costs paid, in cash */
    double turnover;         /* sum of |exposure traded| */
} fh_api_episode_log;

size_t fh_api_episode_log_size(void); /* sizeof(fh_api_episode_log): 80 */
/* Episodes finished since the last call (in step, then slot order); at most cap are
 * copied into out (the oldest) and removed, the rest kept. Returns the number copied,
 * or -1 on an invalid handle. */
int64_t fh_api_vec_env_take_logs(fh_api_vec_env *e, fh_api_episode_log *out, int64_t cap);

/* ---- named tensors: safetensors files and checkpoints ----
 * A handle holds tensors (name, dtype, shape, bytes; in order) and __metadata__
 * strings. dtype codes are fh_dtype's (safetensors.h): 0 F32, 1 F64, 2 I32, 3 I64,
 * 4 U64, 5 U8. */
typedef struct fh_api_tensors fh_api_tensors;

#define FH_API_MAX_RANK 8

fh_api_tensors *fh_api_tensors_new(char *err, size_t err_cap);
/* Any safetensors file (a `foxhunt collect` batch, ...), read and validated by fh_st_read. */
fh_api_tensors *fh_api_tensors_read(const char *path, char *err, size_t err_cap);
/* A checkpoint: the file checks of fh_checkpoint_load too (format, version, kind, every
 * float finite, norm.std > 0), so what foxhunt would refuse is refused here. */
fh_api_tensors *fh_api_checkpoint_load(const char *path, char *err, size_t err_cap);
void fh_api_tensors_free(fh_api_tensors *t);
int64_t fh_api_tensors_count(const fh_api_tensors *t); /* -1 on an invalid handle */
/* Tensor i: its name (owned by t), dtype, rank, shape (FH_API_MAX_RANK entries, the
 * first rank set) and byte size; any output may be NULL. */
int fh_api_tensors_info(fh_api_tensors *t, int64_t i, const char **name, int *dtype,
                        int *rank, int64_t *shape, size_t *nbytes);
/* Copies tensor i's bytes (little-endian, row-major) into out (nbytes must equal its
 * size). */
int fh_api_tensors_copy(fh_api_tensors *t, int64_t i, void *out, size_t nbytes);
/* Adds (or replaces, keeping its place) a tensor; data (nbytes = shape product x dtype
 * size) is copied. */
int fh_api_tensors_set(fh_api_tensors *t, const char *name, int dtype, int rank,
                       const int64_t *shape, const void *data, size_t nbytes);
int64_t fh_api_tensors_meta_count(const fh_api_tensors *t);
int fh_api_tensors_meta_at(fh_api_tensors *t, int64_t i, const char **key,
                           const char **value);
/* Sets (or replaces) a __metadata__ string. */
int fh_api_tensors_set_meta(fh_api_tensors *t, const char *key, const char *value);
/* Writes every tensor and metadata string as a safetensors file, atomically. */
int fh_api_tensors_write(fh_api_tensors *t, const char *path);
/* Writes t as a foxhunt checkpoint through fh_checkpoint_save, the writer `foxhunt
 * train` uses (atomic; tensor order, finite-float and actor-only rules included): the
 * networks found by their design-note keys (all of a network's params, its Adam
 * moments adam.m.* / adam.v.* and adam.step.NET, or none of them: a fresh optimiser's
 * zeros), norm.mean / norm.std, run.seed, run.iteration, rng.episodes and every other
 * tensor as an extra (at most 16); the metadata "config", "kind" ("actor": an
 * actor-only checkpoint) and data.* (the data identity) as checkpoint.h describes,
 * "format" / "format_version" checked, every other key kept. A handle loaded from a
 * checkpoint and saved unchanged gives the same bytes. */
int fh_api_checkpoint_save(fh_api_tensors *t, const char *path);

/* ---- the networks' tensor tables (nn.h): names, shapes, offsets ----
 * net: "actor", "critic", "curiosity", "qnet", "pqn". */
int fh_api_net_param_count(const char *net);  /* parameters, or -1 for an unknown net */
int fh_api_net_tensor_count(const char *net); /* tensors, or -1 */
/* Tensor i of net: its design-note key ("policy_layer_0.weight") into key (key_cap
 * bytes), rank (1 or 2), shape[2] and offset in the flat parameter buffer (any output
 * may be NULL). FH_API_INPUT for an unknown net or i outside the table. */
int fh_api_net_tensor(const char *net, int i, char *key, size_t key_cap, int *rank,
                      int *shape, int64_t *offset);

/* ---- evaluation: `foxhunt eval`'s backtests ----
 * Loads the checkpoint (full or actor-only, PPO or DQN/PQN) and its configuration,
 * rebuilds its data with its normalisation (or the CSV data_csv, when not NULL), and
 * backtests every policy (greedy, sampled, buy-and-hold, flat, random, the synthetic
 * market's oracle, always-long) on split over the whole split, as `foxhunt eval
 * --returns` does. periods_per_year <= 0: the checkpoint's setting, else the bars per
 * year (at most 1e8, the key's range); NaN or infinity: FH_API_INPUT. */
typedef struct fh_api_eval fh_api_eval;

fh_api_eval *fh_api_eval_run(const char *checkpoint, const char *data_csv, const char *split,
                             uint64_t seed, double periods_per_year, char *err,
                             size_t err_cap);
void fh_api_eval_free(fh_api_eval *ev);
int fh_api_eval_policy_count(const fh_api_eval *ev); /* -1 on an invalid handle */
const char *fh_api_eval_policy_name(const fh_api_eval *ev, int policy); /* "greedy", ... */
int64_t fh_api_eval_bar_count(const fh_api_eval *ev);
/* time (bars) Unix seconds of each bar of the split. */
int fh_api_eval_time(fh_api_eval *ev, int64_t *time);
/* close (bars) the close price of each bar of the split (returns.csv's close column). */
int fh_api_eval_close(fh_api_eval *ev, double *close);
/* Policy's path: equity (bars), exposure, cost (currency), turnover (bars - 1 each, the
 * step into bar t + 1); any NULL skipped. */
int fh_api_eval_path(fh_api_eval *ev, int policy, double *equity, double *exposure,
                     double *cost, double *turnover);
/* Metric names (eval.json's keys: "sharpe", "sharpe_se", ...), and a policy's value. */
int fh_api_eval_metric_count(void);
const char *fh_api_eval_metric_name(int i);
int fh_api_eval_metric(fh_api_eval *ev, int policy, const char *name, double *value);
/* The split's name, periods per year, 1 when in sample, and the verdict line. */
const char *fh_api_eval_split(const fh_api_eval *ev);
double fh_api_eval_periods_per_year(const fh_api_eval *ev);
int fh_api_eval_in_sample(const fh_api_eval *ev);
const char *fh_api_eval_verdict(const fh_api_eval *ev);

/* ---- GPU PPO collection into DLPack tensors (gpu_ppo_collector) ----
 * A foxhunt collection (N episodes x L steps: actor, sampling, environment, critic,
 * curiosity, GAE) on the first CUDA GPU, its batch left on the device and handed out
 * as DLPack tensors that alias the collector's buffers (no copy through the host).
 * Episodes persist across collections, as in training. */
typedef struct fh_api_gpu_collector fh_api_gpu_collector;

/* 1 when this library was built with CUDA and a GPU is usable; else 0 with why. */
int fh_api_gpu_available(char *why, size_t cap);
/* Episodes on the market's training split, seeded (seed, i) as the CPU collector and
 * `foxhunt collect` seed them; the environment, gamma and gae_lambda from cfg (or the
 * market's configuration when NULL); kernel "fast" or "reference" (and "fast/warp",
 * ...). */
fh_api_gpu_collector *fh_api_gpu_collector_create(fh_api_market *m, const fh_api_config *cfg,
                                                  int n_episodes, int n_steps, uint64_t seed,
                                                  const char *kernel, char *err,
                                                  size_t err_cap);
/* Frees the handle; the device buffers live on until every tensor handed out has been
 * released by its consumer (DLPack's deleter). */
void fh_api_gpu_collector_free(fh_api_gpu_collector *c);
/* One collection with the given host params (flat, shapes.h's layout: actor 18,221,
 * critic 364,929, curiosity 4,384 floats; n_* must match; every param finite, else
 * FH_API_INPUT naming the first other one and nothing collected). Returns when the
 * batch is complete on the device. Tensors handed out before alias the same buffers:
 * they now hold this collection. */
int fh_api_gpu_collect(fh_api_gpu_collector *c, const float *actor, int64_t n_actor,
                       const float *critic, int64_t n_critic, const float *curiosity,
                       int64_t n_curiosity);
/* The names of the batch's tensors, in order: "states" F32 (N, L, 54) (row stride may
 * exceed 54: the strides say), "actions" I32, "log_probs", "values", "advantages",
 * "returns", "rewards" F32, "dones" I32, "exposures" F32, "bars" I32 (N, L). */
int fh_api_gpu_tensor_count(void);
const char *fh_api_gpu_tensor_name(int i);
/* A DLPack DLManagedTensor* (DLPack 0.x ABI, kDLCUDA) for the named tensor of the last
 * collection, in *managed; its consumer calls its deleter once (torch.from_dlpack does,
 * through a "dltensor" capsule). FH_API_INPUT before the first collect. */
int fh_api_gpu_tensor(fh_api_gpu_collector *c, const char *name, void **managed);
/* Copies a tensor of the last collection to the host (tests, and readers without a
 * DLPack consumer): out holds N x L (x 54 for states, densely) elements. */
int fh_api_gpu_tensor_to_host(fh_api_gpu_collector *c, const char *name, void *out,
                              size_t nbytes);
/* The last collection's device time: the whole collection, and with the weight upload. */
int fh_api_gpu_timing(fh_api_gpu_collector *c, double *collect_ms, double *total_ms);

/* ---- training: `foxhunt train`'s one loop (train_loop.h) behind a handle ----
 * A trainer is one run of the learner cfg's algo names (ppo, dqn, pqn, constant) into
 * the run directory cfg's out names (empty: a new runs/<data>__<algo>__<seed>__<time>/,
 * as the CLI names it), with the CLI's files: config.json, metrics.csv and
 * metrics.jsonl, checkpoints, final.safetensors (interrupted.safetensors after a stop),
 * with eval_every validation.csv and best.safetensors. cfg's resume continues a
 * checkpoint. The test-split evaluation `foxhunt train` prints at its end is
 * fh_api_eval_run's on the checkpoint. One process: gpus or world above 1 is refused
 * (`foxhunt train --gpus K` runs those). The run directory stays locked until _free. */
typedef struct fh_api_trainer fh_api_trainer;

/* Validates cfg, creates the learner (data, networks, device) and opens and locks the
 * run directory (config.json written), as `foxhunt train` does before its first
 * iteration; NULL with the message in err. flags: the CLI's flags that are not
 * settings: FH_API_TRAIN_FORCE (--force: a directory holding another run's files is
 * moved aside, else refused), FH_API_TRAIN_ALLOW_OTHER_DATA (--allow-other-data). */
#define FH_API_TRAIN_FORCE 1
#define FH_API_TRAIN_ALLOW_OTHER_DATA 2
fh_api_trainer *fh_api_trainer_create(const fh_api_config *cfg, int flags, char *err,
                                      size_t err_cap);
void fh_api_trainer_free(fh_api_trainer *t);
/* The run directory; the iteration reached (the checkpoint's when resuming, before a
 * run); the last checkpoint written ("" before one); best.safetensors' path when the
 * validation chose one, else NULL; 1 when the callback stopped the run. */
const char *fh_api_trainer_out(const fh_api_trainer *t);
int64_t fh_api_trainer_iteration(const fh_api_trainer *t);
const char *fh_api_trainer_checkpoint(const fh_api_trainer *t);
const char *fh_api_trainer_best_checkpoint(const fh_api_trainer *t);
int fh_api_trainer_stopped(const fh_api_trainer *t);

/* Called after each iteration's row is written (and its validation, when there is one):
 * the row of metrics.csv as n column names and values (NaN where the csv cell is empty;
 * the names are valid during the call). Return 0 to stop the run after this iteration
 * (it writes interrupted.safetensors, from which resume continues), else 1. */
typedef int (*fh_api_train_callback)(int n, const char *const *names, const double *values,
                                     void *user);
/* Runs the iterations left (to cfg's iterations), calling callback (may be NULL) after
 * each, then writes the final checkpoint, as fh_train_loop_run. Once per trainer. */
int fh_api_trainer_run(fh_api_trainer *t, fh_api_train_callback callback, void *user);

#ifdef __cplusplus
}
#endif

#endif

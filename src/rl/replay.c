/* replay.c — DQN's replay ring and the collected-transition batch (issue 18; SPEC §7).
 *
 * The ring stores n-step transitions (s, a, G, s', d) ready for y = G + d * Q(s', .);
 * push_batch folds each collection's rewards into those n-step returns
 * (env/q_targets.cuh's fh_q_n_step_window, which replay_push_kernel runs too). Sampling uses
 * the environment's PCG32 (common_device_functions.cuh) so that one fh_rng type and one
 * generator serve the host and the kernels. */
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/q_targets.cuh"
#include "foxhunt/dqn.h"

/* ---- the collected-transition batch ---- */

fh_status fh_transition_batch_alloc(fh_transition_batch *b, int n_episodes, int n_steps,
                                    fh_error *err)
{
    memset(b, 0, sizeof *b);
    if (n_episodes < 1 || n_steps < 1)
        return fh_error_set(err, FH_ERR_INPUT,
                            "a transition batch needs at least 1 episode x 1 step, got "
                            "%d x %d: check the episodes and steps settings",
                            n_episodes, n_steps);
    size_t nl = (size_t)n_episodes * (size_t)n_steps;
    b->states = malloc(nl * FH_STATE_DIM * sizeof(float));
    b->next_states = malloc(nl * FH_STATE_DIM * sizeof(float));
    b->actions = malloc(nl * sizeof(int32_t));
    b->rewards = malloc(nl * sizeof(float));
    b->terminal = malloc(nl);
    b->truncated = malloc(nl);
    b->q_taken = malloc(nl * sizeof(float));
    b->exposures = malloc(nl * sizeof(float));
    b->bars = malloc(nl * sizeof(int32_t));
    if (!b->states || !b->next_states || !b->actions || !b->rewards || !b->terminal ||
        !b->truncated || !b->q_taken || !b->exposures || !b->bars) {
        fh_transition_batch_free(b);
        return fh_error_set(err, FH_ERR_FAILURE,
                            "cannot allocate a transition batch of %d x %d steps (%.1f MB)",
                            n_episodes, n_steps,
                            (double)nl * (2 * FH_STATE_DIM * 4 + 4 + 4 + 2 + 4 + 8) / 1e6);
    }
    b->n_episodes = n_episodes;
    b->n_steps = n_steps;
    return FH_OK;
}

void fh_transition_batch_free(fh_transition_batch *b)
{
    free(b->states);
    free(b->next_states);
    free(b->actions);
    free(b->rewards);
    free(b->terminal);
    free(b->truncated);
    free(b->q_taken);
    free(b->exposures);
    free(b->bars);
    memset(b, 0, sizeof *b);
}

/* ---- PCG32 for the host: the .cuh's functions, so host and device draw alike ---- */

void fh_pcg32_seed(fh_rng *rng, uint64_t seed, uint64_t stream)
{
    rng_seed(rng, (unsigned long long)seed, (unsigned long long)stream);
}

uint32_t fh_pcg32_next(fh_rng *rng)
{
    return (uint32_t)pcg32(rng);
}

int fh_pcg32_uniform_int(fh_rng *rng, int n)
{
    return rng_uniform_int(rng, n);
}

/* ---- the ring ---- */

fh_status fh_replay_init(fh_replay *r, int capacity, fh_error *err)
{
    memset(r, 0, sizeof *r);
    if (capacity < 1)
        return fh_error_set(err, FH_ERR_INPUT,
                            "replay capacity must be at least 1 transition, got %d", capacity);
    size_t c = (size_t)capacity;
    r->states = malloc(c * FH_STATE_DIM * sizeof(float));
    r->next_states = malloc(c * FH_STATE_DIM * sizeof(float));
    r->actions = malloc(c * sizeof(int32_t));
    r->returns = malloc(c * sizeof(float));
    r->discounts = malloc(c * sizeof(float));
    if (!r->states || !r->next_states || !r->actions || !r->returns || !r->discounts) {
        fh_replay_free(r);
        return fh_error_set(err, FH_ERR_FAILURE,
                            "cannot allocate a replay ring of %d transitions (%.1f MB): "
                            "lower the buffer size",
                            capacity, (double)c * (2 * FH_STATE_DIM + 3) * 4 / 1e6);
    }
    r->capacity = capacity;
    return FH_OK;
}

void fh_replay_free(fh_replay *r)
{
    free(r->states);
    free(r->next_states);
    free(r->actions);
    free(r->returns);
    free(r->discounts);
    memset(r, 0, sizeof *r);
}

fh_status fh_replay_push_batch(fh_replay *r, const fh_transition_batch *b, int n_step,
                               float gamma, fh_error *err)
{
    if (!r->states || r->capacity < 1)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "replay push into a ring that was not initialised "
                            "(call fh_replay_init first)");
    if (b->n_episodes < 1 || b->n_steps < 1 || !b->states || !b->next_states ||
        !b->actions || !b->rewards || !b->terminal || !b->truncated)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "replay push of an empty or unallocated transition batch "
                            "(%d x %d)", b->n_episodes, b->n_steps);
    if (n_step < 1)
        return fh_error_set(err, FH_ERR_INPUT, "n-step must be at least 1, got %d", n_step);
    if (!(gamma >= 0.0f && gamma <= 1.0f))
        return fh_error_set(err, FH_ERR_INPUT, "gamma must lie in [0, 1], got %g",
                            (double)gamma);
    const int L = b->n_steps;
    const int64_t nl = (int64_t)b->n_episodes * L;
    /* With more transitions than slots, the first nl - C would be overwritten within
     * this push: skip them, but move head as if they had been written. */
    const int64_t first = nl > r->capacity ? nl - r->capacity : 0;
    for (int64_t i = first; i < nl; i++) {
        const int64_t row = i / L * L;
        const int t = (int)(i - row);
        double d;
        int last;
        double g = fh_q_n_step_window(b->rewards + row, b->terminal + row, b->truncated + row,
                                      L, t, n_step, (double)gamma, &d, &last);
        const int64_t slot = ((int64_t)r->head + i) % r->capacity;
        memcpy(r->states + slot * FH_STATE_DIM, b->states + i * FH_STATE_DIM,
               FH_STATE_DIM * sizeof(float));
        memcpy(r->next_states + slot * FH_STATE_DIM, b->next_states + (row + last) * FH_STATE_DIM,
               FH_STATE_DIM * sizeof(float));
        r->actions[slot] = b->actions[i];
        r->returns[slot] = (float)g;
        r->discounts[slot] = (float)d;
    }
    r->head = (int)(((int64_t)r->head + nl) % r->capacity);
    r->size = (int)(r->size + nl < r->capacity ? r->size + nl : r->capacity);
    r->n_pushed += nl;
    return FH_OK;
}

fh_status fh_replay_sample(const fh_replay *r, fh_rng *rng, int batch_size,
                           int32_t *out_indices, fh_error *err)
{
    if (r->size < 1)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "cannot sample from an empty replay ring: push a collection "
                            "first (learning starts after the ring holds transitions)");
    if (batch_size < 0)
        return fh_error_set(err, FH_ERR_INPUT, "replay batch size must be >= 0, got %d",
                            batch_size);
    for (int i = 0; i < batch_size; i++)
        out_indices[i] = rng_uniform_int(rng, r->size);
    return FH_OK;
}

fh_status fh_replay_minibatch_alloc(fh_replay_minibatch *mb, int capacity, fh_error *err)
{
    memset(mb, 0, sizeof *mb);
    if (capacity < 1)
        return fh_error_set(err, FH_ERR_INPUT,
                            "replay minibatch size must be at least 1, got %d", capacity);
    size_t c = (size_t)capacity;
    mb->states = malloc(c * FH_STATE_DIM * sizeof(float));
    mb->next_states = malloc(c * FH_STATE_DIM * sizeof(float));
    mb->actions = malloc(c * sizeof(int32_t));
    mb->returns = malloc(c * sizeof(float));
    mb->discounts = malloc(c * sizeof(float));
    if (!mb->states || !mb->next_states || !mb->actions || !mb->returns || !mb->discounts) {
        fh_replay_minibatch_free(mb);
        return fh_error_set(err, FH_ERR_FAILURE,
                            "cannot allocate a replay minibatch of %d rows", capacity);
    }
    mb->capacity = capacity;
    return FH_OK;
}

void fh_replay_minibatch_free(fh_replay_minibatch *mb)
{
    free(mb->states);
    free(mb->next_states);
    free(mb->actions);
    free(mb->returns);
    free(mb->discounts);
    memset(mb, 0, sizeof *mb);
}

fh_status fh_replay_gather(const fh_replay *r, const int32_t *indices, int n,
                           fh_replay_minibatch *mb, fh_error *err)
{
    if (n < 0 || n > mb->capacity)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "replay gather of %d rows into a minibatch of %d: allocate it "
                            "with the batch size", n, mb->capacity);
    /* Check every index first so that a bad one leaves mb untouched. */
    for (int i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= r->size)
            return fh_error_set(err, FH_ERR_FAILURE,
                                "replay index %d (row %d) outside the %d filled slots",
                                (int)indices[i], i, r->size);
    for (int i = 0; i < n; i++) {
        const size_t s = (size_t)indices[i];
        memcpy(mb->states + (size_t)i * FH_STATE_DIM, r->states + s * FH_STATE_DIM,
               FH_STATE_DIM * sizeof(float));
        memcpy(mb->next_states + (size_t)i * FH_STATE_DIM, r->next_states + s * FH_STATE_DIM,
               FH_STATE_DIM * sizeof(float));
        mb->actions[i] = r->actions[s];
        mb->returns[i] = r->returns[s];
        mb->discounts[i] = r->discounts[s];
    }
    mb->size = n;
    return FH_OK;
}

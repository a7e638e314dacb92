/* q_trainer_resume.c — `foxhunt train --algo dqn|pqn --resume CKPT` (q_trainer_resume.h).
 *
 * The same contract as PPO's resume (src/rl/trainer.c): the checkpoint's config (flags
 * override it), its normalisation, networks with Adam state, iteration, episode states,
 * streams and running returns; the run seed must match, the data's identity must match
 * unless --allow-other-data (then the networks carry on and every episode restarts); an
 * edited or damaged file is refused with a message naming the file, never a crash. DQN
 * adds the target network, the gradient-step count and the replay ring (its filled
 * slots, when the checkpoint holds them: FH_Q_RING_SAVE_MAX_BYTES). With all of it a
 * resumed run is bit-identical to an uninterrupted one (tests/dqn/test_dqn_resume.c). The
 * checks of the moments, episodes and data identity are PPO's own (resume_checks.c). */
#include "rl/q_trainer_resume.h"

#include <stdlib.h>
#include <string.h>

#include "foxhunt/env.h"
#include "rl/resume_checks.h"
#include "rl/q_backend.h"

fh_status fh_q_resume_prepare(const fh_train_config *cfg, fh_q_resume_plan *plan,
                              fh_error *err)
{
    memset(plan, 0, sizeof *plan);
    const char *path = cfg->resume;
    const int dqn = strcmp(cfg->algo, "dqn") == 0;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.norm = &plan->norm;
    fh_checkpoint_extra ring = {"q.replay.state", FH_DTYPE_I64, 1, {Q_RING_STATE_LEN},
                                plan->ring, 1, 0};
    ck.extras = &ring;
    ck.n_extras = 1;
    char *json = NULL;
    fh_status st = fh_checkpoint_load(path, &ck, &json, err);
    if (st != FH_OK)
        return st;
    if (ck.actor_only) {
        free(json);
        return fh_error_set(err, FH_ERR_INPUT, "%s: this is an actor-only checkpoint (foxhunt "
                            "export --actor); it cannot resume training: resume from the full "
                            "checkpoint", path);
    }
    if (!json)
        return fh_error_set(err, FH_ERR_INPUT, "%s: the checkpoint holds no config, so which "
                            "algorithm wrote it is unknown; --algo %s resumes checkpoints of "
                            "foxhunt train --algo %s", path, cfg->algo, cfg->algo);
    fh_train_config saved;
    fh_train_config_default(&saved);
    st = fh_train_config_from_json(json, &saved, err);
    free(json);
    if (st != FH_OK) {
        fh_error_prefix(err, "%s: ", path);
        return st;
    }
    if (strcmp(saved.algo, cfg->algo) != 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s: a %s checkpoint (its config's algo); "
                            "--algo %s cannot resume it (another network and optimiser "
                            "state): resume it with --algo %s, or leave --algo out (a resume "
                            "takes the checkpoint's)", path, saved.algo, cfg->algo, saved.algo);
    if (!dqn)
        return FH_OK;
    const int64_t *r = plan->ring;
    if (!ring.present)
        return fh_error_set(err, FH_ERR_INPUT, "%s: missing key \"q.replay.state\" (the DQN "
                            "replay ring's state; a checkpoint written before DQN runs could "
                            "resume lacks it: start a new run)", path);
    if (r[Q_RING_SAVED] != 0 && r[Q_RING_SAVED] != 1)
        return fh_error_set(err, FH_ERR_INPUT, "%s: q.replay.state[%d] (saved) = %lld is not "
                            "0 or 1; the file was edited or damaged", path, Q_RING_SAVED,
                            (long long)r[Q_RING_SAVED]);
    if (r[Q_RING_CAPACITY] < 1 || r[Q_RING_CAPACITY] > INT32_MAX || r[Q_RING_N_PUSHED] < 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s: q.replay.state: capacity %lld (1 to "
                            "2^31-1) or transitions pushed %lld (>= 0) out of range; the file "
                            "was edited or damaged", path, (long long)r[Q_RING_CAPACITY],
                            (long long)r[Q_RING_N_PUSHED]);
    const int64_t cap = r[Q_RING_CAPACITY], pushed = r[Q_RING_N_PUSHED];
    const int64_t want_size = pushed < cap ? pushed : cap, want_head = pushed % cap;
    if (r[Q_RING_SIZE] != want_size || r[Q_RING_HEAD] != want_head)
        return fh_error_set(err, FH_ERR_INPUT, "%s: q.replay.state: size %lld and head %lld, "
                            "but a ring of capacity %lld that took %lld transitions has size "
                            "%lld and head %lld; the file was edited or damaged", path,
                            (long long)r[Q_RING_SIZE], (long long)r[Q_RING_HEAD],
                            (long long)cap, (long long)pushed, (long long)want_size,
                            (long long)want_head);
    if (r[Q_RING_SAVED] && cap != cfg->replay_capacity)
        return fh_error_set(err, FH_ERR_INPUT, "%s: the checkpoint's replay ring holds up to "
                            "%lld transitions, --replay-capacity is %d: resume with the "
                            "checkpoint's capacity (leave --replay-capacity out)", path,
                            (long long)cap, cfg->replay_capacity);
    return FH_OK;
}

/* The ring's loaded slots [0, size): actions index Q's output, discounts are gamma^k or 0
 * (the loader checked that every float is finite). */
static fh_status check_ring(const fh_replay *r, const char *path, fh_error *err)
{
    for (int i = 0; i < r->size; i++) {
        if (r->actions[i] < 0 || r->actions[i] >= FH_N_ACTIONS)
            return fh_error_set(err, FH_ERR_INPUT, "%s: key \"q.replay.actions\": element %d "
                                "is %d, not an action in [0, %d); the file was edited or "
                                "damaged", path, i, (int)r->actions[i], FH_N_ACTIONS);
        if (!(r->discounts[i] >= 0.0f && r->discounts[i] <= 1.0f))
            return fh_error_set(err, FH_ERR_INPUT, "%s: key \"q.replay.discounts\": element %d "
                                "is %g, outside [0, 1] (gamma^k, or 0 after a terminal); the "
                                "file was edited or damaged", path, i, (double)r->discounts[i]);
    }
    return FH_OK;
}

/* The ring as fh_replay_init left it: the run refills it (learning_starts applies again). */
static void ring_empty(fh_replay *r)
{
    r->size = 0;
    r->head = 0;
    r->n_pushed = 0;
}

fh_status fh_q_resume_load(fh_q_trainer *t, const fh_q_resume_plan *plan, fh_error *err)
{
    const char *path = t->cfg.resume;
    const int N = t->cfg.episodes;
    const uint64_t expect_update_inc = t->update_rng.inc; /* seeded by init, not loaded yet */
    const int64_t ring_size = t->pqn ? 0 : plan->ring[Q_RING_SIZE];
    const int ring_saved = !t->pqn && plan->ring[Q_RING_SAVED] == 1;
    if (ring_saved && (ring_size < 0 || ring_size > t->ring.capacity)) /* prepare checked it */
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: ring size %lld for a ring of %d",
                            __FILE__, __LINE__, (long long)ring_size, t->ring.capacity);
    uint64_t *rng = malloc((size_t)N * 2 * sizeof(uint64_t));
    if (!rng)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    uint64_t seed = 0;
    int64_t iteration = -1, grad_steps = 0, ring_state[Q_RING_STATE_LEN];
    fh_feature_norm norm; /* the data was built with it already (prepare) */
    fh_data_identity saved;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.nets[t->net] = &t->q;
    ck.nets[FH_NET_CURIOSITY] = &t->curiosity;
    ck.norm = &norm;
    ck.seed = &seed;
    ck.iteration = &iteration;
    ck.rng_state = rng;
    ck.rng_rows = (size_t)N;
    ck.rng_cols = 2;
    ck.data = &saved;
    fh_checkpoint_extra e[12];
    int n = 0;
    e[n++] = (fh_checkpoint_extra){"env.episodes", FH_DTYPE_U8, 2,
                                   {N, (int64_t)sizeof(fh_episode_state)}, t->episodes, 0, 0};
    e[n++] = (fh_checkpoint_extra){"q.update_rng", FH_DTYPE_U64, 1, {2}, &t->update_rng, 0, 0};
    e[n++] = (fh_checkpoint_extra){"trainer.episode_return", FH_DTYPE_F64, 1, {N},
                                   t->episode_return, 0, 0};
    e[n++] = (fh_checkpoint_extra){"trainer.episode_length", FH_DTYPE_I32, 1, {N},
                                   t->episode_length, 0, 0};
    /* PQN takes no gradient-step count into account; its earliest checkpoints lack it */
    e[n++] = (fh_checkpoint_extra){"q.grad_steps", FH_DTYPE_I64, 1, {1}, &grad_steps, t->pqn, 0};
    if (!t->pqn) {
        e[n++] = (fh_checkpoint_extra){"q.target", FH_DTYPE_F32, 1,
                                       {(int64_t)t->target.n_params}, t->target.params, 0, 0};
        e[n++] = (fh_checkpoint_extra){"q.replay.state", FH_DTYPE_I64, 1, {Q_RING_STATE_LEN},
                                       ring_state, 0, 0};
        if (ring_saved && ring_size > 0) {
            fh_replay *r = &t->ring;
            e[n++] = (fh_checkpoint_extra){"q.replay.states", FH_DTYPE_F32, 2,
                                           {ring_size, FH_STATE_DIM}, r->states, 0, 0};
            e[n++] = (fh_checkpoint_extra){"q.replay.actions", FH_DTYPE_I32, 1, {ring_size},
                                           r->actions, 0, 0};
            e[n++] = (fh_checkpoint_extra){"q.replay.returns", FH_DTYPE_F32, 1, {ring_size},
                                           r->returns, 0, 0};
            e[n++] = (fh_checkpoint_extra){"q.replay.next_states", FH_DTYPE_F32, 2,
                                           {ring_size, FH_STATE_DIM}, r->next_states, 0, 0};
            e[n++] = (fh_checkpoint_extra){"q.replay.discounts", FH_DTYPE_F32, 1, {ring_size},
                                           r->discounts, 0, 0};
        }
    }
    ck.extras = e;
    ck.n_extras = n;
    fh_status st = fh_checkpoint_load(path, &ck, NULL, err);
    if (st != FH_OK)
        goto done;
    const fh_mlp *nets[2] = {&t->q, &t->curiosity};
    if (seed != t->cfg.seed)
        st = fh_error_set(err, FH_ERR_INPUT, "%s: run seed %llu differs from --seed %llu; "
                          "leave --seed out (a resume takes the checkpoint's)", path,
                          (unsigned long long)seed, (unsigned long long)t->cfg.seed);
    else if (iteration < 0)
        st = fh_error_set(err, FH_ERR_INPUT, "%s: run.iteration = %lld is negative", path,
                          (long long)iteration);
    else if (grad_steps < 0)
        st = fh_error_set(err, FH_ERR_INPUT, "%s: q.grad_steps = %lld is negative", path,
                          (long long)grad_steps);
    else if (t->update_rng.inc != expect_update_inc)
        st = fh_error_set(err, FH_ERR_INPUT, "%s: q.update_rng's stream %llu is not the "
                          "update's (%llu); the file was edited or damaged", path,
                          t->update_rng.inc, (unsigned long long)expect_update_inc);
    else
        st = fh_resume_check_second_moments(nets, 2, path, err);
    if (st != FH_OK)
        goto done;
    if (!t->pqn) {
        if (memcmp(ring_state, plan->ring, sizeof ring_state) != 0) {
            st = fh_error_set(err, FH_ERR_INPUT, "%s: q.replay.state changed between two reads "
                              "of the file; resume again when nothing writes it", path);
            goto done;
        }
        t->ring.size = ring_saved ? (int)ring_size : 0;
        if ((st = check_ring(&t->ring, path, err)) != FH_OK)
            goto done;
        if (ring_saved) {
            t->ring.head = (int)ring_state[Q_RING_HEAD];
            t->ring.n_pushed = ring_state[Q_RING_N_PUSHED];
        } else {
            ring_empty(&t->ring);
            t->ring_restarted = 1;
        }
    }
    /* on other data the networks, optimiser, target, update stream and iteration carry
     * on; the episodes and the ring's transitions belong to the other data: they restart
     * as a fresh run's */
    fh_resume_episodes eps = {&t->cfg, &t->train_market, t->episodes, t->episode_return,
                              t->episode_length};
    if ((st = fh_resume_check_data(&eps, ck.data_present ? &saved : NULL, &t->data_identity,
                                   t->pqn ? "" : " and its replay ring starts empty",
                                   &t->data_identity_unchecked, &t->data_other, path, err)) !=
        FH_OK)
        goto done;
    if (t->data_other && !t->pqn)
        ring_empty(&t->ring);
    if (!t->data_other && (st = fh_resume_check_episodes(&eps, rng, path, err)) != FH_OK)
        goto done;
    if ((st = fh_q_backend_set_episodes(t, err)) != FH_OK)
        goto done;
    t->iteration = iteration;
    t->grad_steps = grad_steps;
done:
    free(rng);
    return st;
}

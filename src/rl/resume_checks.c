/* resume_checks.c — the resume checks PPO and the Q-trainers share (resume_checks.h). */
#include "rl/resume_checks.h"

#include <math.h>

#include "env/common_device_functions.cuh"

/* Appended to a refused episode: what it means. */
#define RESUME_HINT                                                                      \
    " (a resumed episode must be one this run's training split could have produced: the " \
    "file was edited or damaged, or --data, --train-fraction or --synthetic-bars differ "  \
    "from the checkpoint's)"

fh_status fh_resume_check_second_moments(const fh_mlp *const *nets, int n_nets,
                                         const char *path, fh_error *err)
{
    for (int k = 0; k < n_nets; k++) {
        const fh_mlp *m = nets[k];
        for (int i = 0; i < m->n_tensors; i++) {
            const fh_tensor_desc *td = &m->tensors[i];
            for (size_t j = 0; j < td->numel; j++)
                if (!(m->adam_v[td->offset + j] >= 0.0f))
                    return fh_error_set(err, FH_ERR_INPUT, "%s: key \"adam.v.%s\": element %zu "
                                        "is %g; a second moment is >= 0", path, td->name, j,
                                        (double)m->adam_v[td->offset + j]);
        }
    }
    return FH_OK;
}

fh_status fh_resume_check_episodes(const fh_resume_episodes *e, const uint64_t *rng,
                                   const char *path, fh_error *err)
{
    const int N = e->cfg->episodes;
    char why[512];
    for (int n = 0; n < N; n++) {
        const fh_episode_state *ep = &e->episodes[n];
        if (!fh_episode_state_validate(&e->cfg->env, e->market, ep, why, sizeof why))
            return fh_error_set(err, FH_ERR_INPUT, "%s: episode %d of %d: %s" RESUME_HINT, path,
                                n, N, why);
        unsigned long long stream = ((unsigned long long)n << 1) | 1ULL;
        if (ep->rng.inc != stream)
            return fh_error_set(err, FH_ERR_INPUT, "%s: episode %d of %d: rng.inc = %llu is not "
                                "slot %d's stream (%llu)" RESUME_HINT, path, n, N, ep->rng.inc, n,
                                stream);
        if (rng[2 * n] != ep->rng.state || rng[2 * n + 1] != ep->rng.inc)
            return fh_error_set(err, FH_ERR_INPUT, "%s: rng.episodes[%d] = (%llu, %llu) differs "
                                "from env.episodes[%d]'s stream (%llu, %llu); the file was "
                                "edited or damaged", path, n, (unsigned long long)rng[2 * n],
                                (unsigned long long)rng[2 * n + 1], n, ep->rng.state,
                                ep->rng.inc);
        if (!isfinite(e->episode_return[n]))
            return fh_error_set(err, FH_ERR_INPUT, "%s: trainer.episode_return[%d] = %g is not "
                                "finite", path, n, e->episode_return[n]);
        if (e->episode_length[n] != ep->step)
            return fh_error_set(err, FH_ERR_INPUT, "%s: trainer.episode_length[%d] = %d, but "
                                "episode %d has taken %d steps; the file was edited or damaged",
                                path, n, (int)e->episode_length[n], n, ep->step);
    }
    return FH_OK;
}

fh_status fh_resume_check_data(const fh_resume_episodes *e, const fh_data_identity *saved,
                               const fh_data_identity *now, const char *also_restarts,
                               int *unchecked, int *other, const char *path, fh_error *err)
{
    char why[FH_DATA_SOURCE_MAX * 2 + 256];
    if (!saved) {
        *unchecked = 1; /* no identity recorded: the episodes are still checked */
        return FH_OK;
    }
    if (fh_data_identity_same(saved, now, why, sizeof why))
        return FH_OK;
    const fh_train_config *cfg = e->cfg;
    if (!cfg->allow_other_data)
        return fh_error_set(err, FH_ERR_INPUT, "%s: the checkpoint was trained on other data "
                            "(%s); resume with the same data, or pass --allow-other-data to "
                            "train its networks on this data (its episodes then restart%s)",
                            path, why, also_restarts);
    /* other data, allowed: the networks and optimiser carry on; the episodes (bars, prices,
     * barriers of the other data) restart as a fresh run's would */
    *other = 1;
    for (int n = 0; n < cfg->episodes; n++) {
        env_episode_init(&cfg->env, e->market, &e->episodes[n], cfg->seed,
                         (unsigned long long)n);
        e->episode_return[n] = 0.0;
        e->episode_length[n] = 0;
    }
    return FH_OK;
}

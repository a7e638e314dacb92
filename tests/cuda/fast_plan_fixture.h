/* fast_plan_fixture.h — what test_fast_plan.c and test_fast_plan_random.c share: the
 * devices, the problem builder and the plan's checks. */
#ifndef FOXHUNT_TEST_FAST_PLAN_FIXTURE_H
#define FOXHUNT_TEST_FAST_PLAN_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/critic_chunks.h"
#include "cuda/fast_plan.h"
#include "cuda/overrides.h"
#include "test_util.h"

static const fh_plan_device H200 = {"H200", 132, 232448, 140000000000ull};
static const fh_plan_device D99 = {"RTX 4090-like", 128, 101376, 20000000000ull};

#define LANE_SMEM 221632u
#define MIB (1ull << 20)

static inline fh_plan_problem problem(int n, int l, fh_rollout_mapping m)
{
    fh_plan_problem p = {n, l, 20000, 256, 0, m, 0};
    return p;
}

static inline int has_option(const fh_fast_plan *p, const char *opt)
{
    for (int i = 0; i < p->n_options; i++)
        if (strcmp(p->options[i], opt) == 0)
            return 1;
    return 0;
}

/* makes a plan that must succeed; 0 (and a failed check) when it does not */
static inline int make_ok(const fh_plan_device *d, const fh_plan_problem *pr, const fh_gpu_overrides *ov,
                   fh_fast_plan *p)
{
    fh_error err = {0};
    fh_status st = fh_fast_plan_make(d, pr, ov, p, &err);
    CHECK_MSG(st == FH_OK, "%s N %d L %d: status %d: %s", d->name, pr->n_episodes, pr->n_steps,
              (int)st, err.message);
    return st == FH_OK;
}

static inline void check_rollout(const fh_fast_plan *p, fh_rollout_mapping m, int pair, int warp_eps,
                          const char *kernel, int eps_per_block, int threads, int grid,
                          size_t smem)
{
    CHECK_MSG(p->mapping == m, "mapping %d, expected %d", (int)p->mapping, (int)m);
    CHECK_MSG(p->pair == pair, "pair %d, expected %d", p->pair, pair);
    CHECK_MSG(p->warp_episodes == warp_eps, "warp_episodes %d, expected %d", p->warp_episodes,
              warp_eps);
    CHECK_MSG(p->kernel && strcmp(p->kernel, kernel) == 0, "kernel %s, expected %s",
              p->kernel ? p->kernel : "(null)", kernel);
    CHECK_MSG(p->episodes_per_block == eps_per_block, "episodes per block %d, expected %d",
              p->episodes_per_block, eps_per_block);
    CHECK_MSG(p->threads_per_block == threads, "threads %d, expected %d", p->threads_per_block,
              threads);
    CHECK_MSG(p->grid == grid, "grid %d, expected %d", p->grid, grid);
    CHECK_MSG(p->rollout_smem == smem, "rollout smem %zu, expected %zu", p->rollout_smem, smem);
}

#endif

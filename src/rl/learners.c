/* learners.c — the table of learners `--algo` names (learner.h). A new learner is its
 * file and one line here. */
#include <stdio.h>
#include <string.h>

#include "foxhunt/format.h"
#include "rl/learners.h"

static const fh_learner_ops *const LEARNERS[] = {
    &fh_learner_ppo,
    &fh_learner_dqn,
    &fh_learner_pqn,
    &fh_learner_constant,
};
enum { N_LEARNERS = sizeof LEARNERS / sizeof LEARNERS[0] };
const char FH_LEARNER_CHOICES[] = "ppo|dqn|pqn|constant"; /* the names above, in order */

const fh_learner_ops *fh_learner_find(const char *algo)
{
    for (int i = 0; i < N_LEARNERS; i++)
        if (strcmp(LEARNERS[i]->name, algo) == 0)
            return LEARNERS[i];
    return NULL;
}

void fh_learner_names(char *out, size_t n, const char *sep)
{
    if (n)
        out[0] = 0;
    for (int i = 0; i < N_LEARNERS; i++)
        fh_format_append(out, n, "%s%s", i ? sep : "", LEARNERS[i]->name);
}

fh_net_kind fh_learner_policy_net(const char *algo)
{
    const fh_learner_ops *ops = fh_learner_find(algo);
    return ops ? ops->policy_net : FH_NET_ACTOR;
}

fh_status fh_learner_policy_load(const char *checkpoint, const char *algo, fh_mlp *policy,
                                 fh_feature_norm *norm, char **config_json, int *actor_only,
                                 fh_error *err)
{
    memset(policy, 0, sizeof *policy);
    fh_net_kind net = fh_learner_policy_net(algo);
    fh_status st = fh_mlp_init(policy, net, err);
    if (st != FH_OK)
        return st;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.nets[net] = policy;
    ck.norm = norm;
    st = fh_checkpoint_load(checkpoint, &ck, config_json, err);
    if (actor_only)
        *actor_only = ck.actor_only;
    return st;
}

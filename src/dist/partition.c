/* partition.c — see partition.h. */
#include "dist/partition.h"

#include <string.h>

/* FH_ERR_INPUT for `value` (flag `name`) not a positive multiple of world, naming the
 * multiples on either side. */
static fh_status not_multiple(const char *name, int value, int world, fh_error *err)
{
    long below = (long)value / world * world, above = below + world;
    if (below < world)
        return fh_error_set(err, FH_ERR_INPUT, "%s %d is fewer than the %d ranks: each rank "
                            "needs a share of at least 1 (use %s %ld or more)", name, value,
                            world, name, above);
    return fh_error_set(err, FH_ERR_INPUT, "%s %d is not a multiple of the %d ranks: each rank "
                        "takes an equal share (use %s %ld or %ld)", name, value, world, name,
                        below, above);
}

fh_status fh_partition_make(int world, int rank, int total_episodes, int total_minibatch,
                            fh_partition *out, fh_error *err)
{
    memset(out, 0, sizeof *out);
    if (world < 1)
        return fh_error_set(err, FH_ERR_INPUT, "world size %d: expected 1 or more ranks", world);
    if (rank < 0 || rank >= world)
        return fh_error_set(err, FH_ERR_INPUT, "rank %d is outside 0..%d (world size %d)", rank,
                            world - 1, world);
    if (total_episodes < world || total_episodes % world != 0)
        return not_multiple("--episodes", total_episodes, world, err);
    if (total_minibatch < world || total_minibatch % world != 0)
        return not_multiple("--minibatch", total_minibatch, world, err);
    out->world = world;
    out->rank = rank;
    out->total_episodes = total_episodes;
    out->episodes = total_episodes / world;
    out->first_episode = rank * out->episodes;
    out->total_minibatch = total_minibatch;
    out->minibatch = total_minibatch / world;
    return FH_OK;
}

/* iteration_metrics.cu — an iteration's metrics on the device (the trainer's: reward,
 * finished episodes and their returns and lengths, action histogram, costs, turnover,
 * reversals, barrier hits), so that with the GPU update no part of the batch is
 * downloaded: the host receives fh_iteration_sums (~500 bytes). One thread an episode
 * walks its L steps in order, carrying the episode's running return and length across
 * collections (as trainer.c's host loop does) and comparing its lifetime totals with
 * those of the last call. Sums of doubles: block trees, then the last block in a fixed
 * order; counts: integer atomics (exact in any order). `out` is zeroed before. */

extern "C" __global__ void iteration_metrics_kernel(fh_iteration_metrics_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double shm[33];
    __shared__ unsigned long long counts[FH_N_ACTIONS];
    __shared__ long long ints[1 + 1 + FH_BARRIER_N_KINDS];
    for (int k = threadIdx.x; k < FH_N_ACTIONS; k += blockDim.x)
        counts[k] = 0;
    if (threadIdx.x < 2 + FH_BARRIER_N_KINDS)
        ints[threadIdx.x] = 0;
    __syncthreads();
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    double sums[FH_METRIC_SUMS] = {0, 0, 0, 0, 0}; /* reward, return, length, cost, turnover */
    if (n < a.n_episodes) {
        double ret = a.episode_return[n];
        int len = a.episode_length[n];
        long long finished = 0;
        for (int s = 0; s < a.n_steps; s++) {
            long long i = (long long)n * a.n_steps + s;
            float r = a.rewards[i];
            sums[0] += r;
            atomicAdd(&counts[a.actions[i]], 1ULL);
            ret += r;
            len += 1;
            if (a.dones[i]) {
                sums[1] += ret;
                sums[2] += len;
                finished++;
                ret = 0.0;
                len = 0;
            }
        }
        a.episode_return[n] = ret;
        a.episode_length[n] = len;
        const fh_episode_state *ep = &a.episodes[n];
        double *prev = a.totals + (long long)n * FH_EPISODE_TOTALS;
        double cost = ep->life_cost / ep->initial_equity, turnover = ep->life_turnover;
        sums[3] = cost - prev[0];
        sums[4] = turnover - prev[1];
        prev[0] = cost;
        prev[1] = turnover;
        long long *prev_int = a.int_totals + (long long)n * (1 + FH_BARRIER_N_KINDS);
        atomicAdd((unsigned long long *)&ints[0], (unsigned long long)finished);
        atomicAdd((unsigned long long *)&ints[1],
                  (unsigned long long)(ep->life_reversals - prev_int[0]));
        prev_int[0] = ep->life_reversals;
        for (int k = 0; k < FH_BARRIER_N_KINDS; k++) {
            atomicAdd((unsigned long long *)&ints[2 + k],
                      (unsigned long long)(ep->life_barrier_hits[k] - prev_int[1 + k]));
            prev_int[1 + k] = ep->life_barrier_hits[k];
        }
    }
    for (int k = 0; k < FH_METRIC_SUMS; k++) {
        double t = fh_block_sum(sums[k], shm);
        if (threadIdx.x == 0)
            a.partials[(long long)blockIdx.x * FH_METRIC_SUMS + k] = t;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < FH_N_ACTIONS; k += blockDim.x)
        if (counts[k])
            atomicAdd((unsigned long long *)&a.out->action_counts[k], counts[k]);
    if (threadIdx.x == 0) {
        atomicAdd((unsigned long long *)&a.out->finished, (unsigned long long)ints[0]);
        atomicAdd((unsigned long long *)&a.out->reversals, (unsigned long long)ints[1]);
        for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
            atomicAdd((unsigned long long *)&a.out->hits[k], (unsigned long long)ints[2 + k]);
    }
    if (!fh_last_block(a.counter, gridDim.x) || threadIdx.x >= 32)
        return;
    double total[FH_METRIC_SUMS];
    for (int k = 0; k < FH_METRIC_SUMS; k++)
        total[k] = fh_warp_sum_strided(a.partials + k, (int)gridDim.x, FH_METRIC_SUMS);
    if (threadIdx.x == 0) {
        a.out->reward_sum = total[0];
        a.out->return_sum = total[1];
        a.out->length_sum = total[2];
        a.out->cost = total[3];
        a.out->turnover = total[4];
    }
}

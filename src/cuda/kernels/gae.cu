/* gae.cu — the truncation values scattered into the batch, then GAE: a warp scan per
 * episode row over gae_step_terms, the terms compute_gae_backward uses. */
#ifndef FOXHUNT_GAE_CU
#define FOXHUNT_GAE_CU

/* trunc_values[n, t] = V(final observation in slot j) for every used slot. */
__device__ __forceinline__ void scatter_trunc_values_kernel_body(
    float *trunc_values, const float *__restrict__ slot_values,
    const int *__restrict__ trunc_step, int n_episodes, int n_steps, int k_slots)
{
    long long total = (long long)n_episodes * k_slots;
    for (long long s = blockIdx.x * (long long)blockDim.x + threadIdx.x; s < total;
         s += (long long)gridDim.x * blockDim.x) {
        int t = trunc_step[s];
        if (t >= 0)
            trunc_values[(s / k_slots) * n_steps + t] = slot_values[s];
    }
}

/* Phase B of the design note, one warp per episode row: the recurrence
 * A_t = delta_t + carry_t A_{t+1} composes as affine maps, so each lane folds its chunk
 * of the row into one map (A_{t0} = P + Q A_{t1}), a warp suffix scan composes the
 * maps of the lanes after it, and each lane then replays its chunk from the A it is
 * handed. The terms are gae_step_terms, as in compute_gae_backward; only the order of
 * the roundings differs (a sequential scan cost 0.25 ms at N 128: 500 dependent steps
 * through global memory). With `staged` (dynamic shared memory of 5 * n_steps words per
 * warp) the warp first copies its row into shared memory with coalesced loads and
 * writes the results back the same way: read in place, each lane's strided walk missed
 * L1 once 124 rows an SM were in flight (0.67 ms at N 16384). Staged, a lane's chunk is
 * odd in length, so that the lanes' reads fall in different banks. */
__device__ __forceinline__ void gae_kernel_body(
    fh_ppo_outputs out, int n_episodes, int n_steps, float gamma, float lambda,
    int staged)
{
    extern __shared__ float gae_sm[];
    int n = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) / FH_WARP);
    int lane = threadIdx.x % FH_WARP;
    if (n >= n_episodes)
        return; /* whole warps: blockDim is a multiple of 32 */
    long long row = (long long)n * n_steps;
    const float *r = out.rewards + row, *v = out.values + row, *tv = out.trunc_values + row;
    const int *d = out.dones + row, *term = out.terminals + row;
    float *adv = out.advantages + row, *ret = out.returns + row;
    if (staged) {
        float *w = gae_sm + (long long)(threadIdx.x / FH_WARP) * 5 * n_steps;
        float *sr = w, *sv = w + n_steps, *stv = w + 2 * n_steps;
        int *sd = reinterpret_cast<int *>(w + 3 * n_steps), *sterm = sd + n_steps;
        for (int t = lane; t < n_steps; t += FH_WARP) {
            sr[t] = r[t];
            sv[t] = v[t];
            stv[t] = tv[t];
            sd[t] = d[t];
            sterm[t] = term[t];
        }
        __syncwarp();
        r = sr;
        v = sv;
        tv = stv;
        d = sd;
        term = sterm;
        adv = sr; /* a lane writes A_t and R_t over r_t and tv_t once it has read them */
        ret = stv;
    }
    float last_value = out.last_values[n];
    int chunk = (n_steps + FH_WARP - 1) / FH_WARP;
    if (staged)
        chunk |= 1;
    int t0 = lane * chunk < n_steps ? lane * chunk : n_steps;
    int t1 = t0 + chunk < n_steps ? t0 + chunk : n_steps;
    float P = 0.0f, Q = 1.0f;
    for (int t = t1 - 1; t >= t0; t--) {
        float delta, carry;
        gae_step_terms(&delta, &carry, r, v, d, term, tv, last_value, n_steps, t, gamma, lambda);
        P = delta + carry * P;
        Q = carry * Q;
    }
    /* suffix scan: (P, Q) of lanes [lane, 31] composed */
    for (int offset = 1; offset < FH_WARP; offset <<= 1) {
        float Pn = __shfl_down_sync(FH_FULL_MASK, P, offset);
        float Qn = __shfl_down_sync(FH_FULL_MASK, Q, offset);
        if (lane + offset < FH_WARP) {
            P = P + Q * Pn;
            Q = Q * Qn;
        }
    }
    float A = __shfl_down_sync(FH_FULL_MASK, P, 1); /* A at t1: the lanes after this one */
    if (lane == FH_WARP - 1)
        A = 0.0f;
    for (int t = t1 - 1; t >= t0; t--) {
        float delta, carry;
        gae_step_terms(&delta, &carry, r, v, d, term, tv, last_value, n_steps, t, gamma, lambda);
        A = delta + carry * A;
        adv[t] = A;
        ret[t] = A + v[t];
    }
    if (staged) {
        __syncwarp();
        for (int t = lane; t < n_steps; t += FH_WARP) {
            out.advantages[row + t] = adv[t];
            out.returns[row + t] = ret[t];
        }
    }
}

extern "C" __global__ void scatter_trunc_values_kernel(const fh_trunc_values_args a)
{
    scatter_trunc_values_kernel_body(a.trunc_values, a.slot_values, a.trunc_step,
                                     a.n_episodes, a.n_steps, a.k_slots);
}

extern "C" __global__ void gae_kernel(const fh_gae_args a)
{
    gae_kernel_body(a.out, a.n_episodes, a.n_steps, a.gamma, a.lambda, a.staged);
}

#endif

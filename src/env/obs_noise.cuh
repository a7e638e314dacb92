/* obs_noise.cuh — observation noise (issue 34 item 3: regularisation), a part of the
 * environment's shared device code split out of common_device_functions.cuh, which
 * includes it where env_observe is defined (it is not a header of its own: it uses
 * FH_DEVICE, the plain types and env_observe from there). The same text for gcc and
 * NVRTC, under common_device_functions.cuh's rules. */
#ifndef FOXHUNT_OBS_NOISE_CUH
#define FOXHUNT_OBS_NOISE_CUH

/* ---- observation noise (issue 34 item 3: regularisation) ----
 * Training collections add N(0, obs_noise^2) to each market feature of the observation
 * the policy sees. The noise is a pure function of (noise_seed, the slot's stream, the
 * slot's episode count, the episode's step, the feature): a counter-based hash, never
 * the episode's rng, so obs_noise = 0 changes no draw, and every mapping of episodes to
 * threads (CPU, reference and fast kernels) draws the same noise for the same state, equal
 * up to rounding (logf/cosf differ by an ulp or two between glibc and CUDA, and the fast
 * kernels may fuse the add into an FMA): the parity tests compare with tolerances. */
#define FH_NOISE_GOLDEN 0x9E3779B97F4A7C15ULL /* splitmix64's increment (Steele et al. 2014) */
#define FH_NOISE_UNIFORM_BITS 24              /* each uniform from 24 bits: exact in float */
#define FH_NOISE_TWO_PI 6.28318530717958647692f

/* splitmix64's finaliser: a bijection of 64 bits whose every output bit depends on every
 * input bit. */
FH_DEVICE unsigned long long noise_mix64(unsigned long long z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The standard normal draw of (seed, stream, episode, step, feature): the key hashed
 * field by field, two 24-bit uniforms u1 in (0, 1], u2 in [0, 1) from the hash, then
 * Box-Muller's cosine branch. |z| <= sqrt(-2 ln 2^-24) ~ 5.77. */
FH_DEVICE float obs_noise_normal(unsigned long long seed, unsigned long long stream,
                                 int episode, int step, int feature)
{
    unsigned long long h = noise_mix64(seed + FH_NOISE_GOLDEN);
    h = noise_mix64(h ^ (stream + FH_NOISE_GOLDEN));
    h = noise_mix64(h ^ (((unsigned long long)(unsigned int)episode << 32) |
                         (unsigned long long)(unsigned int)step));
    h = noise_mix64(h ^ ((unsigned long long)(unsigned int)feature + FH_NOISE_GOLDEN));
    unsigned int mask = (1u << FH_NOISE_UNIFORM_BITS) - 1u;
    float u1 = (float)(((unsigned int)(h >> 40) & mask) + 1u) * FH_RNG_FLOAT_SCALE;
    float u2 = (float)((unsigned int)(h >> 8) & mask) * FH_RNG_FLOAT_SCALE;
    return sqrtf(-2.0f * logf(u1)) * cosf(FH_NOISE_TWO_PI * u2);
}

/* Feature j's noise for the observation at the slot's episode `episode` and step `step`
 * (ep->episodes_done and ep->step before the episode's end is counted): 0 when
 * cfg->obs_noise is 0. stream: the episode's rng.inc (its slot's fixed stream). */
FH_DEVICE float env_obs_noise(const fh_env_config *cfg, unsigned long long stream, int episode,
                              int step, int j)
{
    if (cfg->obs_noise == 0.0f)
        return 0.0f;
    return cfg->obs_noise * obs_noise_normal(cfg->noise_seed, stream, episode, step, j);
}

/* What training collections observe: env_observe, then each market feature plus its
 * noise (env_obs_noise) keyed by `episode` (the episode this observation belongs to:
 * ep->episodes_done, less one where a caller has already counted the episode's end). */
FH_DEVICE void env_observe_train_as(const fh_env_config *cfg, const fh_env_market *m,
                                    const fh_episode_state *ep, int episode, float *state)
{
    env_observe(cfg, m, ep, state);
    if (cfg->obs_noise == 0.0f)
        return;
    for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
        state[j] += env_obs_noise(cfg, ep->rng.inc, episode, ep->step, j);
}

FH_DEVICE void env_observe_train(const fh_env_config *cfg, const fh_env_market *m,
                                 const fh_episode_state *ep, float *state)
{
    env_observe_train_as(cfg, m, ep, ep->episodes_done, state);
}

#endif

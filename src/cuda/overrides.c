/* overrides.c — the GPU path's run-time overrides (overrides.h): the table, and the one
 * place the process environment is read (getenv appears nowhere else in src/). */
#include "cuda/overrides.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *name;  /* fh_gpu_overrides field, as tests and describe() name it */
    const char *env;   /* FOXHUNT_* */
    size_t offset;     /* of the int in fh_gpu_overrides */
    int lo, hi;        /* accepted values */
    int dflt;          /* FH_AUTO, or the value when unset */
    const char *help;
} override_entry;

#define FIELD(f) offsetof(fh_gpu_overrides, f)

static const override_entry TABLE[] = {
    {"actor_table", "FOXHUNT_ACTOR_FACTOR", FIELD(actor_table), 0, 1, FH_AUTO,
     "the actor's first layer factored through the market (a per-bar table); "
     "auto: when the market has at most N*L bars and the table takes <= 256 MiB"},
    {"critic_factor", "FOXHUNT_CRITIC_FACTOR", FIELD(critic_factor), 0, 1, FH_AUTO,
     "the critic's first layer factored through the market; auto: fp32 with at most "
     "half as many bars as critic rows (1 is refused under bf16)"},
    {"critic_pipeline", "FOXHUNT_CRITIC_PIPELINE", FIELD(critic_pipeline), 0, 1, FH_AUTO,
     "the critic's first layer chunk by chunk on a second stream beside the matmuls; "
     "auto: from 2^22 critic rows where memory allows"},
    {"pipeline_first_rows", "FOXHUNT_CRITIC_PIPELINE_FIRST", FIELD(pipeline_first_rows),
     4096, 1 << 24, FH_AUTO, "rows of the pipeline's first chunk (tests: many chunks at small N)"},
    {"warp_book", "FOXHUNT_WARP_BOOK", FIELD(warp_book), 0, 1, FH_AUTO,
     "the warp mapping with a book-keeping warp per episode (pair kernel); auto: up to "
     "8 episodes per SM"},
    {"warp_episodes", "FOXHUNT_WARP_EPISODES", FIELD(warp_episodes), 1, 2, FH_AUTO,
     "episodes per warp in the warp and pair kernels; auto: 1 with the pair kernel, else 2"},
    {"gemm_tune", "FOXHUNT_GEMM_TUNE", FIELD(gemm_tune), 0, 1, 1,
     "time cublasLt's candidate algorithms per matmul shape, once per GPU model: later "
     "processes take the cache's choice (0: heuristic's first; the parity tests compare "
     "two collectors with it off)"},
    {"rollout_clocks", "FOXHUNT_ROLLOUT_CLOCKS", FIELD(rollout_clocks), 0, 1, 0,
     "compile the rollout's cycle counters in (`foxhunt bench` prints cycles per part of "
     "a step)"},
    {"block_shared_barriers", "FOXHUNT_BLOCK_SHARED_BARRIERS", FIELD(block_shared_barriers), 0,
     1, 0, "the block mapping's racecheck build: the book-keeping warp meets the actor's "
     "barriers too (slower; compute-sanitizer racecheck)"},
    {"update_pdl", "FOXHUNT_UPDATE_PDL", FIELD(update_pdl), 0, 0, FH_AUTO,
     "the updates' kernels launched with programmatic dependent launch; auto: from compute "
     "capability 9.0; 0: plain launches (for a tool that does not follow programmatic "
     "launch; racecheck does, session 22)"},
};
#define N_ENTRIES (sizeof TABLE / sizeof TABLE[0])

static int *field(fh_gpu_overrides *o, const override_entry *e)
{
    return (int *)((char *)o + e->offset);
}

void fh_gpu_overrides_default(fh_gpu_overrides *o)
{
    for (size_t i = 0; i < N_ENTRIES; i++)
        *field(o, &TABLE[i]) = TABLE[i].dflt;
}

fh_status fh_gpu_overrides_set(fh_gpu_overrides *o, const char *name, const char *value,
                               fh_error *err)
{
    const override_entry *e = NULL;
    for (size_t i = 0; i < N_ENTRIES && !e; i++)
        if (strcmp(name, TABLE[i].name) == 0 || strcmp(name, TABLE[i].env) == 0)
            e = &TABLE[i];
    if (!e)
        return fh_error_set(err, FH_ERR_INPUT, "unknown GPU override '%s' (`foxhunt info` "
                            "lists them)", name);
    if (strcmp(value, "auto") == 0) {
        *field(o, e) = e->dflt;
        return FH_OK;
    }
    char *end = NULL;
    errno = 0;
    long x = strtol(value, &end, 10);
    if (end == value || *end != '\0' || errno != 0 || x < e->lo || x > e->hi)
        return fh_error_set(err, FH_ERR_INPUT, "%s=%s (%s): expected an integer from %d to %d, "
                            "or auto", e->env, value, e->name, e->lo, e->hi);
    *field(o, e) = (int)x;
    return FH_OK;
}

fh_status fh_gpu_overrides_parse(fh_gpu_overrides *o, const char *assignment, fh_error *err)
{
    const char *eq = strchr(assignment, '=');
    char name[64];
    if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof name)
        return fh_error_set(err, FH_ERR_INPUT, "'%s': expected name=value", assignment);
    memcpy(name, assignment, (size_t)(eq - assignment));
    name[eq - assignment] = '\0';
    return fh_gpu_overrides_set(o, name, eq + 1, err);
}

fh_status fh_gpu_overrides_from_env(fh_gpu_overrides *o, fh_error *err)
{
    fh_gpu_overrides_default(o);
    for (size_t i = 0; i < N_ENTRIES; i++) {
        const char *v = getenv(TABLE[i].env);
        fh_status st;
        if (v && v[0] && (st = fh_gpu_overrides_set(o, TABLE[i].env, v, err)) != FH_OK)
            return st;
    }
    return FH_OK;
}

fh_status fh_gpu_overrides_or_env(const fh_gpu_overrides *given, fh_gpu_overrides *out,
                                  fh_error *err)
{
    if (!given)
        return fh_gpu_overrides_from_env(out, err);
    *out = *given;
    return FH_OK;
}

void fh_gpu_overrides_describe(const fh_gpu_overrides *o, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_ENTRIES && used < n; i++) {
        int v = *field((fh_gpu_overrides *)o, &TABLE[i]);
        if (v != TABLE[i].dflt)
            used += (size_t)snprintf(buf + used, n - used, "%s%s=%d", used ? " " : "",
                                     TABLE[i].name, v);
    }
    if (!buf[0])
        snprintf(buf, n, "none");
}

void fh_gpu_overrides_print_table(FILE *f)
{
    fprintf(f, "GPU overrides (environment; unset = the plan decides):\n");
    for (size_t i = 0; i < N_ENTRIES; i++)
        fprintf(f, "  %-30s %d..%d  %s\n", TABLE[i].env, TABLE[i].lo, TABLE[i].hi,
                TABLE[i].help);
    fprintf(f, "  %-30s path   the compiled kernels and timed matmul algorithms (default "
            "$XDG_CACHE_HOME/foxhunt or ~/.cache/foxhunt)\n", "FOXHUNT_CACHE_DIR");
}

int fh_kernel_cache_dir(char *out, size_t n)
{
    const char *env = getenv("FOXHUNT_CACHE_DIR");
    if (env && *env) {
        snprintf(out, n, "%s", env);
    } else if ((env = getenv("XDG_CACHE_HOME")) && *env) {
        snprintf(out, n, "%s/foxhunt", env);
    } else if ((env = getenv("HOME")) && *env) {
        char base[800];
        snprintf(base, sizeof base, "%.780s/.cache", env);
        mkdir(base, 0755);
        snprintf(out, n, "%s/foxhunt", base);
    } else {
        return 0;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST)
        return 0;
    return 1;
}

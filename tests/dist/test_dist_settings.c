/* test_dist_settings.c — the [dist] settings of `foxhunt train` (dist/dist_settings.h,
 * dist/dist_env.h): every contradiction refused with a message naming the flags, a
 * rank's rank taken from --rank or from an MPI launcher's or Slurm's variables (a table
 * stands in for the environment), and the CLI refusing bad --gpus/--world/--rank with
 * exit status 2 before it starts anything (no GPU or NCCL needed). */
#include "test_proc.h" /* first: _GNU_SOURCE */

#include "dist/dist_env.h"
#include "dist/dist_settings.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

/* ---- the launcher's environment, from a table ---- */

typedef struct {
    const char *const *pairs; /* name, value, ..., NULL */
} env_table;

static const char *table_get(const char *name, void *ctx)
{
    const env_table *t = ctx;
    for (int i = 0; t->pairs[i]; i += 2)
        if (strcmp(t->pairs[i], name) == 0)
            return t->pairs[i + 1];
    return NULL;
}

static fh_launcher_env parse_env(const char *const *pairs, fh_status want, const char *needle)
{
    env_table t = {pairs};
    fh_launcher_env e;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_launcher_env_parse(&e, table_get, &t, &err);
    CHECK_MSG(st == want && (!needle || strstr(err.message, needle)), "env parse: status %d, "
              "'%s' (expected %d, '%s')", (int)st, err.message, (int)want, needle ? needle : "");
    return e;
}

static void test_launcher_env(void)
{
    const char *none[] = {"HOME", "/root", NULL};
    fh_launcher_env e = parse_env(none, FH_OK, NULL);
    CHECK(e.rank == -1 && e.world == -1 && e.local_rank == -1 && e.source[0] == '\0');
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "8",
                          "OMPI_COMM_WORLD_LOCAL_RANK", "1", "PMI_RANK", "5", NULL};
    e = parse_env(ompi, FH_OK, NULL);
    CHECK(e.rank == 3 && e.world == 8 && e.local_rank == 1 && strstr(e.source, "Open MPI"));
    const char *pmi[] = {"PMI_RANK", "2", "PMI_SIZE", "4", NULL};
    e = parse_env(pmi, FH_OK, NULL);
    CHECK(e.rank == 2 && e.world == 4 && e.local_rank == -1 && strstr(e.source, "PMI_RANK"));
    const char *slurm[] = {"SLURM_PROCID", "7", "SLURM_NTASKS", "16", "SLURM_LOCALID", "3", NULL};
    e = parse_env(slurm, FH_OK, NULL);
    CHECK(e.rank == 7 && e.world == 16 && e.local_rank == 3 && strstr(e.source, "Slurm"));
    const char *bad[] = {"OMPI_COMM_WORLD_RANK", "two", NULL};
    parse_env(bad, FH_ERR_INPUT, "OMPI_COMM_WORLD_RANK = 'two'");
    const char *negative[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "-4", NULL};
    parse_env(negative, FH_ERR_INPUT, "SLURM_NTASKS = '-4'");
}

/* ---- resolve ---- */

static fh_launcher_env no_env(void)
{
    fh_launcher_env e;
    memset(&e, 0, sizeof e);
    e.rank = e.world = e.local_rank = -1;
    return e;
}

static fh_dist_settings resolve(const fh_train_config *cfg, const fh_launcher_env *env,
                                fh_status want, const char *needle)
{
    fh_dist_settings ds;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_dist_settings_resolve(cfg, env, &ds, &err);
    CHECK_MSG(st == want && (!needle || strstr(err.message, needle)),
              "resolve: status %d, '%s' (expected %d, '%s')", (int)st, err.message, (int)want,
              needle ? needle : "");
    return ds;
}

static void test_resolve(void)
{
    fh_train_config base;
    fh_train_config_default(&base); /* 128 episodes, minibatch 512, ppo, device auto */
    fh_launcher_env env = no_env();
    fh_train_config c = base;
    CHECK(resolve(&c, &env, FH_OK, NULL).mode == FH_DIST_OFF);

    c = base;
    c.gpus = 2;
    fh_dist_settings ds = resolve(&c, &env, FH_OK, NULL);
    CHECK(ds.mode == FH_DIST_LAUNCH && ds.gpus == 2);
    c.gpus = 1; /* one rank through NCCL */
    CHECK(resolve(&c, &env, FH_OK, NULL).mode == FH_DIST_LAUNCH);
    c.gpus = 3;
    resolve(&c, &env, FH_ERR_INPUT, "--gpus 3: --episodes 128 is not a multiple of the 3 ranks");
    c = base;
    c.gpus = 2;
    c.minibatch = 511;
    resolve(&c, &env, FH_ERR_INPUT, "--minibatch 511 is not a multiple");
    c = base;
    c.gpus = 2;
    c.world = 2;
    resolve(&c, &env, FH_ERR_INPUT, "starts its ranks itself: leave out --world");
    c.world = 0;
    c.rank = 1;
    resolve(&c, &env, FH_ERR_INPUT, "leave out --rank");
    c.rank = -1;
    strcpy(c.rendezvous, "/tmp/x");
    resolve(&c, &env, FH_ERR_INPUT, "leave out --rendezvous");
    c = base;
    c.gpus = 2;
    strcpy(c.device, "cpu");
    resolve(&c, &env, FH_ERR_INPUT, "--device cpu contradicts");
    c = base;
    c.gpus = 2;
    strcpy(c.update_device, "cpu");
    resolve(&c, &env, FH_ERR_INPUT, "--update-device cpu contradicts");
    c = base;
    c.gpus = 2;
    strcpy(c.algo, "dqn");
    resolve(&c, &env, FH_ERR_INPUT, "data-parallel training is PPO's");

    /* a rank of a launcher of your own */
    c = base;
    c.rank = 1;
    resolve(&c, &env, FH_ERR_INPUT, "--rank needs --world");
    c = base;
    strcpy(c.rendezvous, "/tmp/x");
    resolve(&c, &env, FH_ERR_INPUT, "--rendezvous needs --world");
    c = base;
    c.world = 2;
    strcpy(c.rendezvous, "/tmp/x");
    resolve(&c, &env, FH_ERR_INPUT, "--world 2: this process has no rank");
    c.rank = 2;
    resolve(&c, &env, FH_ERR_INPUT, "rank 2 (--rank) is outside 0..1 for --world 2");
    c.rank = 1;
    ds = resolve(&c, &env, FH_OK, NULL);
    CHECK(ds.mode == FH_DIST_RANK && ds.world == 2 && ds.rank == 1 && ds.local_rank == -1 &&
          strcmp(ds.rank_source, "--rank") == 0);
    c.rendezvous[0] = '\0';
    resolve(&c, &env, FH_ERR_INPUT, "--world 2 needs --rendezvous FILE");
    c = base;
    c.world = 4;
    c.episodes = 130;
    c.rank = 0;
    strcpy(c.rendezvous, "/tmp/x");
    resolve(&c, &env, FH_ERR_INPUT, "--world 4: --episodes 130 is not a multiple");

    /* the rank from mpirun's environment; --rank wins over it */
    fh_launcher_env mpi = no_env();
    mpi.rank = 3;
    mpi.world = 4;
    mpi.local_rank = 1;
    snprintf(mpi.source, sizeof mpi.source, "Open MPI (OMPI_COMM_WORLD_RANK)");
    c = base;
    c.world = 4;
    strcpy(c.rendezvous, "/shared/run.id");
    ds = resolve(&c, &mpi, FH_OK, NULL);
    CHECK(ds.mode == FH_DIST_RANK && ds.rank == 3 && ds.local_rank == 1 &&
          strstr(ds.rank_source, "OMPI_COMM_WORLD_RANK"));
    c.world = 2;
    resolve(&c, &mpi, FH_ERR_INPUT, "--world 2, but Open MPI (OMPI_COMM_WORLD_RANK) started 4");
    c.world = 4;
    c.rank = 0;
    ds = resolve(&c, &mpi, FH_OK, NULL);
    CHECK(ds.rank == 0 && ds.local_rank == -1 && strcmp(ds.rank_source, "--rank") == 0);
    /* the launcher's variables mean nothing without --world */
    c = base;
    CHECK(resolve(&c, &mpi, FH_OK, NULL).mode == FH_DIST_OFF);
}

/* The process's environment is read only for a rank without --rank: a launcher's odd
 * variable does not trouble a one-process run. */
static void test_process_env(void)
{
    fh_train_config c;
    fh_train_config_default(&c);
    fh_dist_settings ds;
    fh_error err;
    fh_error_clear(&err);
    setenv("OMPI_COMM_WORLD_RANK", "garbage", 1);
    CHECK_MSG(fh_dist_settings_of_process(&c, &ds, &err) == FH_OK && ds.mode == FH_DIST_OFF,
              "a one-process run read the launcher's variables: %s", err.message);
    c.world = 2;
    strcpy(c.rendezvous, "/tmp/x");
    c.rank = 1;
    CHECK(fh_dist_settings_of_process(&c, &ds, &err) == FH_OK && ds.rank == 1);
    c.rank = -1;
    fh_error_clear(&err);
    CHECK_MSG(fh_dist_settings_of_process(&c, &ds, &err) == FH_ERR_INPUT &&
              strstr(err.message, "OMPI_COMM_WORLD_RANK = 'garbage'"), "'%s'", err.message);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    CHECK(fh_dist_settings_of_process(&c, &ds, &err) == FH_OK && ds.rank == 1 &&
          strstr(ds.rank_source, "Open MPI"));
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
}

/* ---- the CLI: refused with exit status 2, before anything starts ---- */

static void cli_refuses(const char *dir, const char *const *args, const char *needles)
{
    char *out = NULL, *err_text = NULL;
    const char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    argv[n++] = "train";
    for (int i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int rc = fh_run_foxhunt(dir, "refused", (char **)argv, &out, &err_text);
    /* needles: alternatives separated by '|' (what a machine without a GPU, without
     * NCCL or with them says) */
    int found = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", needles);
    for (char *tok = strtok(buf, "|"); tok && !found; tok = strtok(NULL, "|"))
        found = err_text && strstr(err_text, tok) != NULL;
    CHECK_MSG(rc == 2 && found, "train %s ...: exit %d, stderr '%s' (expected 2 and one of '%s')",
              args[0], rc, err_text ? err_text : "", needles);
    free(out);
    free(err_text);
}

static void test_cli(void)
{
    char dir[512];
    if (!fh_make_temp_dir(dir, sizeof dir, "test_dist_settings")) {
        CHECK_MSG(0, "no temporary directory");
        return;
    }
    char out_dir[600], rdv[600];
    snprintf(out_dir, sizeof out_dir, "%s/run", dir);
    snprintf(rdv, sizeof rdv, "%s/id", dir);
    const char *both[] = {"--gpus", "2", "--world", "2", "--out", out_dir, NULL};
    cli_refuses(dir, both, "--gpus 2 starts its ranks itself: leave out --world");
    const char *uneven[] = {"--gpus", "3", "--out", out_dir, NULL};
    cli_refuses(dir, uneven, "--episodes 128 is not a multiple of the 3 ranks: each rank takes "
                             "an equal share (use --episodes 126 or 129)");
    const char *negative[] = {"--gpus", "-1", "--out", out_dir, NULL};
    cli_refuses(dir, negative, "gpus = -1 is out of range");
    const char *no_rank[] = {"--world", "2", "--rendezvous", rdv, "--out", out_dir, NULL};
    cli_refuses(dir, no_rank, "--world 2: this process has no rank");
    const char *big_rank[] = {"--world", "2", "--rank", "5", "--rendezvous", rdv, NULL};
    cli_refuses(dir, big_rank, "rank 5 (--rank) is outside 0..1");
    const char *lone_rank[] = {"--rank", "1", NULL};
    cli_refuses(dir, lone_rank, "--rank needs --world");
    const char *cpu[] = {"--gpus", "2", "--device", "cpu", NULL};
    cli_refuses(dir, cpu, "--device cpu contradicts it");
    const char *dqn[] = {"--gpus", "2", "--algo", "pqn", NULL};
    cli_refuses(dir, dqn, "data-parallel training is PPO's");
    /* valid settings on any machine, stopped before training: no NCCL at the named path,
     * or no (second) GPU, or no NCCL in this build */
    const char *launch[] = {"--gpus", "2", "--episodes", "2", "--steps", "2", "--minibatch", "2",
                            "--iterations", "1", "--nccl-library", "/nonexistent/libnccl.so.2",
                            "--out", out_dir, NULL};
    cli_refuses(dir, launch, "--nccl-library /nonexistent/libnccl.so.2 cannot be used|"
                             "no CUDA device|this host has 1 GPU|built without NCCL");
    const char *rank0[] = {"--world", "1", "--rank", "0", "--rendezvous", rdv, "--episodes", "2",
                           "--steps", "2", "--minibatch", "2", "--iterations", "1",
                           "--nccl-library", "/nonexistent/libnccl.so.2", "--out", out_dir, NULL};
    cli_refuses(dir, rank0, "train (rank 0 of 1): ");
    CHECK_MSG(!fh_file_exists(rdv) && !fh_file_exists(out_dir), "a refused run left %s or %s",
              rdv, out_dir);
    if (fh_test_failed == 0)
        fh_remove_tree(dir);
    else
        fprintf(stderr, "logs kept in %s\n", dir);
}

int main(void)
{
    test_launcher_env();
    test_resolve();
    test_process_env();
    test_cli();
    return fh_test_finish();
}

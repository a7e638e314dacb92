/* main.c — `foxhunt`: dispatch to a subcommand (SPEC §10). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command_entry;

static const command_entry COMMANDS[] = {
    {"train", fh_cmd_train, "train a PPO agent (synthetic market by default)"},
    {"eval", fh_cmd_eval, "evaluate a checkpoint on the test split against baselines"},
    {"walkforward", fh_cmd_walkforward, "train and test fold by fold; one stitched out-of-sample path"},
    {"collect", fh_cmd_collect, "run one experience collection and write it as safetensors"},
    {"update", fh_cmd_update, "run one PPO update on a saved collection, recording each step"},
    {"export", fh_cmd_export, "write the actor-only checkpoint of a checkpoint (--actor), for eval"},
    {"bench", fh_cmd_bench, "measure collection throughput (CPU and GPU)"},
    {"sweep", fh_cmd_sweep, "search training settings on the validation split (Optuna; --help)"},
    {"features", fh_cmd_features, "compute the 51 market features of a CSV"},
    {"info", fh_cmd_info, "version, build options, CUDA toolkit, defaults"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void print_usage(FILE *to)
{
    fprintf(to, "usage: foxhunt <command> [flags]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(to, "  %-12s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(to, "\n`foxhunt <command> --help` lists a command's flags and defaults.\n");
}

int fh_cli_report(const char *command, const fh_error *err)
{
    /* Messages from the flag parser already name the command; others get it here. */
    if (strncmp(err->message, "foxhunt ", 8) == 0)
        fprintf(stderr, "error: %s\n", err->message);
    else
        fprintf(stderr, "error: foxhunt %s: %s\n", command, err->message);
    return err->status == FH_ERR_INPUT ? 2 : 1;
}

int main(int argc, char **argv)
{
    /* Under a file size limit (`ulimit -f`) a write past it raises SIGXFSZ, whose default
     * action kills the process with no message, a torn file and a leftover .tmp (issue
     * 32). Ignored, the write fails with EFBIG instead, and every write path reports it
     * as it does a full disk: a message, no .tmp, the last good files kept. The library
     * leaves signal dispositions to its host (Python ignores SIGXFSZ already). */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("foxhunt %s\n", FH_VERSION);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], COMMANDS[i].name) == 0)
            return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "foxhunt: error: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return 2;
}

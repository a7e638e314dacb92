/* commands.h — the subcommands of `foxhunt` (SPEC §10). Each takes argv with argv[0]
 * the subcommand's name and returns the process exit status (0 ok, 2 usage/input
 * error, 1 other failure; `train` stopped by SIGINT / SIGTERM after writing
 * interrupted.safetensors: 130 / 143, as a shell reports a process those signals
 * killed). */
#ifndef FOXHUNT_COMMANDS_H
#define FOXHUNT_COMMANDS_H

#include "foxhunt/error.h"

int fh_cmd_train(int argc, char **argv);
int fh_cmd_eval(int argc, char **argv);
int fh_cmd_walkforward(int argc, char **argv);
int fh_cmd_collect(int argc, char **argv);
int fh_cmd_update(int argc, char **argv);
int fh_cmd_export(int argc, char **argv);
int fh_cmd_bench(int argc, char **argv);
int fh_cmd_features(int argc, char **argv);
int fh_cmd_info(int argc, char **argv);
/* `foxhunt sweep`: hands over to python/foxhunt/sweep.py (Optuna; cmd_sweep.c) */
int fh_cmd_sweep(int argc, char **argv);

/* Prints "foxhunt <command>: error: <message>" to stderr and returns the exit code
 * that err->status maps to (2 for input errors, 1 otherwise). */
int fh_cli_report(const char *command, const fh_error *err);

#endif

/* run_record.h — what a run was made by (issue 36 item 7, as rl-zoo keeps args.yml):
 * the command line, foxhunt's version and git commit (`git describe` at build time;
 * "unknown" for a build outside a git checkout), the device it trained on and the
 * matmul precision. config.json carries it as its "record" object; every checkpoint as
 * the __metadata__ strings record.command_line, record.version, record.git_commit,
 * record.device and record.precision (safetensors metadata is a map of strings). It is
 * not configuration: resume and walkforward's comparison of settings never read it
 * (docs/CHECKPOINTS.md). */
#ifndef FOXHUNT_RUN_RECORD_H
#define FOXHUNT_RUN_RECORD_H

#include "foxhunt/device.h"
#include "foxhunt/learner.h"
#include "foxhunt/train_config.h"

#define FH_RUN_RECORD_COMMAND_MAX 4096
#define FH_RUN_RECORD_KEYS 5

typedef struct {
    char command_line[FH_RUN_RECORD_COMMAND_MAX]; /* "unknown" until set */
    char version[32];
    char git_commit[64];
    char device[300];     /* "cuda: NVIDIA H200" or "cpu" */
    char precision[16];
    /* the strings above as __metadata__ keys and values (fh_run_record_meta) */
    const char *meta_keys[FH_RUN_RECORD_KEYS], *meta_values[FH_RUN_RECORD_KEYS];
} fh_run_record;

/* The build's git commit (`git describe --always --dirty`), or "unknown". */
const char *fh_run_record_git_commit(void);

/* Version, commit, device (dev, or "unknown" when NULL) and cfg's precision; the command
 * line "unknown". */
void fh_run_record_init(fh_run_record *r, const fh_train_config *cfg,
                        const fh_device_info *dev);
/* The command line: program then argv[0..argc), each argument shell-quoted where it
 * needs to be (cut with "..." past FH_RUN_RECORD_COMMAND_MAX). */
void fh_run_record_set_command(fh_run_record *r, const char *program, int argc,
                               char *const *argv);
/* config_json with a top-level "record" object added (malloc'd; NULL when config_json
 * does not parse or for want of memory). */
char *fh_run_record_add_to_json(const fh_run_record *r, const char *config_json);
/* The record as a save's metadata (points into r; valid while r is). */
fh_save_meta fh_run_record_meta(fh_run_record *r);

#endif

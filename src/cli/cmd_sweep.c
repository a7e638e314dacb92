/* cmd_sweep.c — `foxhunt sweep`: hyper-parameter search scored on the validation split
 * (issue 23). The search is Optuna's, driven by the Python package's foxhunt.sweep
 * (python/foxhunt/sweep.py: trials, early stopping, the winner's INI); this command
 * hands over to it with this binary as the trainer, so `foxhunt sweep --help` and every
 * flag are that module's. The package is found beside the build (the source tree's
 * python/ folder, one or two levels above the binary), else where pip installed it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"

/* dir/foxhunt/sweep.py exists */
static int has_module(const char *dir)
{
    char path[PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/foxhunt/sweep.py", dir);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The source tree's python/ folder seen from the binary (build/foxhunt,
 * build/sub/foxhunt), into out; 0 when there is none. */
static int source_python_dir(const char *exe, char *out, size_t n)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", exe);
    for (int up = 1; up <= 3; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            return 0;
        *slash = '\0';
        snprintf(out, n, "%s/python", dir);
        if (has_module(out))
            return 1;
    }
    return 0;
}

int fh_cmd_sweep(int argc, char **argv)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "foxhunt sweep: error: cannot find this program's path (%s)\n",
                strerror(errno));
        return 1;
    }
    exe[len] = '\0';
    char pydir[PATH_MAX + 16];
    if (source_python_dir(exe, pydir, sizeof pydir)) {
        const char *old = getenv("PYTHONPATH");
        char joined[2 * PATH_MAX + 32];
        snprintf(joined, sizeof joined, "%s%s%s", pydir, old && old[0] ? ":" : "",
                 old ? old : "");
        setenv("PYTHONPATH", joined, 1);
    }
    const char *python = "python3"; /* the one on PATH, as scripts/setup.sh installs into */
    char **args = calloc((size_t)argc + 6, sizeof *args);
    if (!args) {
        fprintf(stderr, "foxhunt sweep: error: out of memory\n");
        return 1;
    }
    int k = 0;
    args[k++] = (char *)python;
    args[k++] = "-m";
    args[k++] = "foxhunt.sweep";
    args[k++] = "--foxhunt";
    args[k++] = exe;
    for (int i = 1; i < argc; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    fflush(stdout);
    execvp(python, args);
    fprintf(stderr, "foxhunt sweep: error: cannot run %s (%s): the sweep is Python's "
            "(python/foxhunt/sweep.py, with optuna); install Python 3 and run "
            "scripts/setup.sh\n", python, strerror(errno));
    free(args);
    return 1;
}

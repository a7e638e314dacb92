/* cmd_pending.c — subcommands whose issue has not landed yet. Each one says so and
 * exits 1; it is removed from here when its real implementation lands. */
#include <stdio.h>

#include "cli/commands.h"

static int pending(const char *name, const char *issue)
{
    fprintf(stderr, "foxhunt %s: not available in this build yet (%s)\n", name, issue);
    return 1;
}

int fh_cmd_collect(int argc, char **argv) { (void)argc; (void)argv; return pending("collect", "issue 6"); }
int fh_cmd_bench(int argc, char **argv) { (void)argc; (void)argv; return pending("bench", "issue 6"); }

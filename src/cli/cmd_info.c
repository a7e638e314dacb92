/* cmd_info.c — `foxhunt info`: version, build options, CUDA toolkit/NVRTC, defaults. */
#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "foxhunt/shapes.h"
#if FH_HAVE_CUDA
#include "cuda/nvrtc_compile.h"
#endif

int fh_cmd_info(int argc, char **argv)
{
    fh_arg_spec spec = {"info", "Print the version, build options and defaults.", NULL, 0};
    fh_error err;
    int help = 0;
    if (fh_args_parse(&spec, argc, argv, &help, &err) != FH_OK)
        return fh_cli_report("info", &err);
    if (help)
        return 0;
    printf("foxhunt %s\n", FH_VERSION);
    printf("build type:      %s%s\n", FH_BUILD_TYPE, FH_SANITIZE_BUILD ? " (ASan+UBSan)" : "");
    printf("compiler:        %s\n", __VERSION__);
#if FH_HAVE_CUDA
    int v = fh_nvrtc_version();
    printf("CUDA toolkit:    found at build time; NVRTC %d.%d\n", v / 1000, (v % 1000) / 10);
#else
    printf("CUDA toolkit:    not found at build time (CPU path only)\n");
#endif
    printf("state/actions:   %d features + %d portfolio = %d, %d actions (%d exposures x %d urgencies)\n",
           FH_N_MARKET_FEATURES, FH_N_PORTFOLIO_FEATURES, FH_STATE_DIM, FH_N_ACTIONS,
           FH_N_EXPOSURES, FH_N_URGENCIES);
    printf("networks:        actor %d, critic %d, curiosity %d parameters\n",
           FH_ACTOR_N_PARAMS, FH_CRITIC_N_PARAMS, FH_CURIOSITY_N_PARAMS);
    printf("collection:      N %d episodes x L %d steps\n", FH_DEFAULT_EPISODES,
           FH_DEFAULT_STEPS);
    return 0;
}

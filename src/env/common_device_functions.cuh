/* common_device_functions.cuh — the environment, written once for the C compiler and
 * NVRTC (SPEC §3; issue 3 fills this file). */
#ifndef FOXHUNT_COMMON_DEVICE_FUNCTIONS_CUH
#define FOXHUNT_COMMON_DEVICE_FUNCTIONS_CUH
#include "foxhunt/shapes.h"
#endif

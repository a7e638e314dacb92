/* gpu_market.h — a training split's market arrays on the device, as the collectors'
 * kernels read them (fh_env_market with device pointers). */
#ifndef FOXHUNT_GPU_MARKET_H
#define FOXHUNT_GPU_MARKET_H

#include "foxhunt/data.h"
#include "foxhunt/env.h"
#include "foxhunt/error.h"

/* Allocates and fills *features (n, 51), *close and *sigma (n) from view, and points
 * d_market at them; a view of several segments has its segment ends uploaded into the
 * tail of *sigma's allocation (d_market->segment_ends). On failure the caller frees whatever is non-NULL (cudaFree). Uses
 * the legacy stream: synchronise before a non-blocking stream reads them. */
fh_status fh_gpu_market_upload(float **features, float **close, float **sigma,
                               fh_env_market *d_market, const fh_market_view *view,
                               fh_error *err);

#endif

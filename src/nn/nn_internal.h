/* nn_internal.h — helpers shared by src/nn files, not part of the public API. */
#ifndef FOXHUNT_NN_INTERNAL_H
#define FOXHUNT_NN_INTERNAL_H

/* fh_linear_backward with dx overwritten (sgemm beta 0) instead of accumulated: the
 * MLP's hidden gradients live in its workspace and so need no zeroing. */
void fh_linear_backward_overwrite_dx(float *dx, float *dw, float *db, const float *dy,
                                     const float *x, const float *w, int B, int in, int out);

#endif

/* validation.h — model selection on the validation split for the training loop
 * (validation.c; train_loop.h). */
#ifndef FOXHUNT_RL_VALIDATION_H
#define FOXHUNT_RL_VALIDATION_H

#include "foxhunt/train_loop.h"

/* Prepares it: refuses a run without a validation split, and on a resume in place keeps
 * validation.csv's rows up to the resumed iteration and takes the best so far from them
 * and best.safetensors. */
fh_status fh_validation_start(fh_train_loop *loop, fh_error *err);
/* Backtests the greedy policy on the validation split (the host's weights: sync first),
 * appends the row to OUT/validation.csv and, when its Sharpe is the best so far, saves
 * OUT/best.safetensors (its metadata records the iteration and the Sharpe). */
fh_status fh_validation_run(fh_train_loop *loop, fh_error *err);

#endif

/* normalize.c — z-score normalisation of the features (SPEC §2): mean and population
 * std fitted on the training rows only (double accumulation), applied to every row,
 * then clipped to +-FH_FEATURE_CLIP. A feature that is constant over the training rows
 * (std below NORM_STD_FLOOR, e.g. hour-of-day on daily bars) gets std 1, so it
 * normalises to (x - mean) instead of dividing by ~0. */
#include <math.h>

#include "foxhunt/data.h"

#define NORM_STD_FLOOR 1e-8

void fh_feature_norm_fit(fh_feature_norm *norm, const float *features, size_t begin,
                         size_t end)
{
    for (int k = 0; k < FH_N_MARKET_FEATURES; k++) {
        double s = 0.0;
        for (size_t i = begin; i < end; i++)
            s += features[i * FH_N_MARKET_FEATURES + k];
        double m = end > begin ? s / (double)(end - begin) : 0.0, v = 0.0;
        for (size_t i = begin; i < end; i++) {
            double d = features[i * FH_N_MARKET_FEATURES + k] - m;
            v += d * d;
        }
        double sd = end > begin ? sqrt(v / (double)(end - begin)) : 0.0;
        norm->mean[k] = (float)m;
        norm->std[k] = sd < NORM_STD_FLOOR ? 1.0f : (float)sd;
    }
}

void fh_feature_norm_apply(const fh_feature_norm *norm, float *features, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float *row = features + i * FH_N_MARKET_FEATURES;
        for (int k = 0; k < FH_N_MARKET_FEATURES; k++) {
            float z = (row[k] - norm->mean[k]) / norm->std[k];
            if (!(z == z)) /* NaN (only from a corrupt norm): neutral */
                z = 0.0f;
            row[k] = z > FH_FEATURE_CLIP ? FH_FEATURE_CLIP
                   : z < -FH_FEATURE_CLIP ? -FH_FEATURE_CLIP : z;
        }
    }
}

/* capi_nets.c — the networks' tensor tables (capi.h), from nn.h's descriptors, so a
 * binding builds its layers and flat buffers from the library's own table instead of a
 * copy of it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "foxhunt/nn.h"

static const fh_net_desc *net_by_name(const char *net)
{
    for (int k = 0; net && k < FH_NET_COUNT; k++) {
        const fh_net_desc *d = fh_net_desc_get((fh_net_kind)k);
        if (d && strcmp(d->name, net) == 0)
            return d;
    }
    return NULL;
}

int fh_api_net_param_count(const char *net)
{
    const fh_net_desc *d = net_by_name(net);
    return d ? (int)d->n_params : -1;
}

int fh_api_net_tensor_count(const char *net)
{
    fh_tensor_desc table[FH_NN_MAX_TENSORS];
    const fh_net_desc *d = net_by_name(net);
    return d ? fh_net_tensors(table, d) : -1;
}

int fh_api_net_tensor(const char *net, int i, char *key, size_t key_cap, int *rank,
                      int *shape, int64_t *offset)
{
    fh_tensor_desc table[FH_NN_MAX_TENSORS];
    const fh_net_desc *d = net_by_name(net);
    if (!d)
        return FH_API_INPUT;
    int n = fh_net_tensors(table, d);
    if (i < 0 || i >= n)
        return FH_API_INPUT;
    if (key && key_cap > 0)
        snprintf(key, key_cap, "%s", table[i].name);
    if (rank)
        *rank = table[i].rank;
    if (shape) {
        shape[0] = table[i].shape[0];
        shape[1] = table[i].shape[1];
    }
    if (offset)
        *offset = (int64_t)table[i].offset;
    return FH_API_OK;
}

fh_status capi_params_finite(fh_error *err, const char *what, fh_net_kind kind,
                             const float *params)
{
    fh_tensor_desc table[FH_NN_MAX_TENSORS];
    int n = fh_net_tensors(table, fh_net_desc_get(kind));
    for (int k = 0; k < n; k++) {
        const fh_tensor_desc *t = &table[k];
        for (size_t i = 0; i < t->numel; i++) {
            float v = params[t->offset + i];
            if (isfinite(v))
                continue;
            char at[48];
            if (t->rank == 2)
                snprintf(at, sizeof at, "[%zu, %zu]", i / (size_t)t->shape[1],
                         i % (size_t)t->shape[1]);
            else
                snprintf(at, sizeof at, "[%zu]", i);
            return fh_error_set(err, FH_ERR_INPUT, "%s: element %zu (%s%s) is %g; every "
                                "param must be finite (one NaN or infinity spreads to every "
                                "output): check where the params came from", what,
                                t->offset + i, t->name, at, (double)v);
        }
    }
    return FH_OK;
}

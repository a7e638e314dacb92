/* mlp.c — fh_mlp: one allocation (params, grads, Adam m, v in the shapes.h layout),
 * orthogonal initialisation, and the batched forward/backward over the layer table
 * (hidden layer: linear, LayerNorm when the descriptor says so, activation).
 *
 * Orthogonal init follows torch.nn.init.orthogonal_ as CleanRL's layer_init uses it:
 * a (max(out,in), min(out,in)) matrix of N(0,1) draws is orthonormalised column by
 * column (modified Gram-Schmidt run twice, in double; R's diagonal is then positive,
 * which is torch's sign fix), transposed when out < in, and scaled by the gain. So
 * W W^T = gain^2 I when out <= in and W^T W = gain^2 I when out > in. */
#include "foxhunt/nn.h"
#include "nn/nn_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

fh_status fh_mlp_init(fh_mlp *m, fh_net_kind kind, fh_error *err)
{
    memset(m, 0, sizeof *m);
    m->desc = fh_net_desc_get(kind);
    if (!m->desc)
        return fh_error_set(err, FH_ERR_FAILURE, "fh_mlp_init: unknown network kind %d",
                            (int)kind);
    m->n_tensors = fh_net_tensors(m->tensors, m->desc);
    const fh_tensor_desc *last = &m->tensors[m->n_tensors - 1];
    m->n_params = last->offset + last->numel;
    if (m->n_params != m->desc->n_params)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "fh_mlp_init: %s table holds %zu parameters, descriptor says %zu",
                            m->desc->name, m->n_params, m->desc->n_params);
    m->mem = calloc(4 * m->n_params, sizeof(float));
    if (!m->mem)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "fh_mlp_init: out of memory for %s (%zu floats)",
                            m->desc->name, 4 * m->n_params);
    m->params = m->mem;
    m->grads = m->mem + m->n_params;
    m->adam_m = m->mem + 2 * m->n_params;
    m->adam_v = m->mem + 3 * m->n_params;
    return FH_OK;
}

void fh_mlp_free(fh_mlp *m)
{
    if (!m)
        return;
    free(m->mem);
    memset(m, 0, sizeof *m);
}

float *fh_mlp_weight(const fh_mlp *m, float *buffer, int layer)
{
    return buffer + m->tensors[fh_net_layer_tensor(m->desc, layer)].offset;
}

float *fh_mlp_bias(const fh_mlp *m, float *buffer, int layer)
{
    return buffer + m->tensors[fh_net_layer_tensor(m->desc, layer) + 1].offset;
}

static int has_norm(const fh_net_desc *d, int layer)
{
    return d->layer_norm && layer < d->n_layers - 1;
}

float *fh_mlp_norm_gamma(const fh_mlp *m, float *buffer, int layer)
{
    if (!has_norm(m->desc, layer))
        return NULL;
    return buffer + m->tensors[fh_net_layer_tensor(m->desc, layer) + 2].offset;
}

float *fh_mlp_norm_beta(const fh_mlp *m, float *buffer, int layer)
{
    if (!has_norm(m->desc, layer))
        return NULL;
    return buffer + m->tensors[fh_net_layer_tensor(m->desc, layer) + 3].offset;
}

void fh_mlp_zero_grad(fh_mlp *m)
{
    memset(m->grads, 0, m->n_params * sizeof(float));
}

void fh_mlp_copy(fh_mlp *dst, const fh_mlp *src)
{
    memcpy(dst->mem, src->mem, 4 * src->n_params * sizeof(float));
    dst->adam_step = src->adam_step;
}

static const char *nonfinite_name(double v)
{
    return isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
}

fh_status fh_mlp_check_finite(const fh_mlp *m, fh_error *err)
{
    const float *bufs[3] = {m->params, m->adam_m, m->adam_v};
    const char *what[3] = {"weights hold", "Adam first moment holds",
                           "Adam second moment holds"};
    for (int b = 0; b < 3; b++) {
        const float *x = bufs[b];
        float acc = 0.0f; /* NaN or Inf anywhere makes the product with 0 NaN */
        for (size_t i = 0; i < m->n_params; i++)
            acc += x[i] * 0.0f;
        if (acc == 0.0f)
            continue;
        for (int t = 0; t < m->n_tensors; t++) {
            const fh_tensor_desc *td = &m->tensors[t];
            for (size_t i = 0; i < td->numel; i++)
                if (!isfinite(x[td->offset + i]))
                    return fh_error_set(err, FH_ERR_FAILURE, "the %s's %s %s at %s[%zu]",
                                        m->desc->name, what[b],
                                        nonfinite_name(x[td->offset + i]), td->name, i);
        }
    }
    return FH_OK;
}

/* ---- deterministic normal draws: splitmix64 + Box-Muller, in double ---- */
typedef struct {
    uint64_t s;
    int have_spare;
    double spare;
} init_rng;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_open01(init_rng *r) /* (0, 1) */
{
    return ((double)(splitmix64(&r->s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double rng_normal(init_rng *r)
{
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    double u1 = rng_open01(r), u2 = rng_open01(r);
    double rad = sqrt(-2.0 * log(u1));
    double th = 6.283185307179586 * u2;
    r->spare = rad * sin(th);
    r->have_spare = 1;
    return rad * cos(th);
}

/* q (rows, cols) column-major in double, rows >= cols: orthonormalise the columns. */
static void gram_schmidt(double *q, int rows, int cols)
{
    for (int j = 0; j < cols; j++) {
        double *qj = q + (size_t)j * rows;
        for (int pass = 0; pass < 2; pass++) {
            for (int k = 0; k < j; k++) {
                const double *qk = q + (size_t)k * rows;
                double dot = 0.0;
                for (int i = 0; i < rows; i++)
                    dot += qk[i] * qj[i];
                for (int i = 0; i < rows; i++)
                    qj[i] -= dot * qk[i];
            }
        }
        double nrm = 0.0;
        for (int i = 0; i < rows; i++)
            nrm += qj[i] * qj[i];
        nrm = sqrt(nrm);
        if (nrm > 0.0)
            for (int i = 0; i < rows; i++)
                qj[i] /= nrm;
    }
}

/* Returns 0 on success, -1 when the scratch allocation fails (weights left zero). */
static int orthogonal_fill(float *w, int out, int in, double gain, init_rng *rng)
{
    int rows = out > in ? out : in, cols = out > in ? in : out;
    double *q = malloc((size_t)rows * cols * sizeof(double)); /* (cols, rows) col-major */
    if (!q)
        return -1;
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        q[i] = rng_normal(rng);
    gram_schmidt(q, rows, cols);
    /* column j of q is q[j*rows .. j*rows+rows). out >= in: W[r][c] = q col c row r;
     * out < in: W = Q^T, W[r][c] = q col r row c. */
    for (int r = 0; r < out; r++)
        for (int c = 0; c < in; c++) {
            double v = out >= in ? q[(size_t)c * rows + r] : q[(size_t)r * rows + c];
            w[(size_t)r * in + c] = (float)(gain * v);
        }
    free(q);
    return 0;
}

void fh_mlp_init_orthogonal(fh_mlp *m, uint64_t seed)
{
    memset(m->mem, 0, 4 * m->n_params * sizeof(float));
    m->adam_step = 0;
    init_rng rng = {.s = seed ^ 0x6F72746867696E69ull, .have_spare = 0, .spare = 0.0};
    const fh_net_desc *d = m->desc;
    for (int l = 0; l < d->n_layers; l++) {
        double gain = l == d->n_layers - 1 ? d->output_gain : d->hidden_gain;
        float *w = fh_mlp_weight(m, m->params, l);
        if (orthogonal_fill(w, d->dims[l + 1], d->dims[l], gain, &rng) != 0) {
            /* Out of memory for a few hundred KB of scratch: fall back to a scaled
             * normal draw, which is still a valid (if not orthogonal) start. */
            for (int i = 0; i < d->dims[l + 1] * d->dims[l]; i++)
                w[i] = (float)(gain * rng_normal(&rng) / sqrt((double)d->dims[l]));
        }
        float *gamma = fh_mlp_norm_gamma(m, m->params, l); /* beta stays 0 */
        for (int i = 0; gamma && i < d->dims[l + 1]; i++)
            gamma[i] = 1.0f;
    }
}

/* ---- activation cache ---- */
fh_status fh_mlp_ws_init(fh_mlp_ws *ws, const fh_mlp *m, int max_batch, fh_error *err)
{
    return fh_mlp_ws_init_kind(ws, m->desc->kind, max_batch, err);
}

fh_status fh_mlp_ws_init_kind(fh_mlp_ws *ws, fh_net_kind kind, int max_batch, fh_error *err)
{
    memset(ws, 0, sizeof *ws);
    if (max_batch <= 0)
        return fh_error_set(err, FH_ERR_FAILURE, "fh_mlp_ws_init: max_batch %d <= 0",
                            max_batch);
    const fh_net_desc *d = fh_net_desc_get(kind);
    if (!d)
        return fh_error_set(err, FH_ERR_FAILURE, "fh_mlp_ws_init: unknown network kind %d",
                            (int)kind);
    size_t total = 0, max_dim = 0;
    for (int l = 0; l <= d->n_layers; l++) {
        total += (size_t)max_batch * d->dims[l];
        if ((size_t)d->dims[l] > max_dim)
            max_dim = d->dims[l];
        if (l < d->n_layers && has_norm(d, l)) /* norm input, mean, rstd */
            total += (size_t)max_batch * (d->dims[l + 1] + 2);
    }
    total += 2 * (size_t)max_batch * max_dim;
    ws->mem = malloc(total * sizeof(float));
    if (!ws->mem)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "fh_mlp_ws_init: out of memory for %s batch %d (%zu floats)",
                            d->name, max_batch, total);
    float *p = ws->mem;
    for (int l = 0; l <= d->n_layers; l++) {
        ws->act[l] = p;
        p += (size_t)max_batch * d->dims[l];
    }
    for (int l = 0; l < d->n_layers; l++) {
        if (!has_norm(d, l))
            continue;
        ws->norm_in[l] = p;
        p += (size_t)max_batch * d->dims[l + 1];
        ws->norm_mean[l] = p;
        p += max_batch;
        ws->norm_rstd[l] = p;
        p += max_batch;
    }
    ws->grad[0] = p;
    ws->grad[1] = p + (size_t)max_batch * max_dim;
    ws->max_batch = max_batch;
    ws->n_layers = d->n_layers;
    ws->kind = kind;
    return FH_OK;
}

void fh_mlp_ws_free(fh_mlp_ws *ws)
{
    if (!ws)
        return;
    free(ws->mem);
    memset(ws, 0, sizeof *ws);
}

static fh_status check_batch(const fh_mlp_ws *ws, const fh_mlp *m, int B, const char *what,
                             fh_error *err)
{
    if (B < 0 || B > ws->max_batch)
        return fh_error_set(err, FH_ERR_FAILURE, "%s (%s): batch %d outside [0, %d]", what,
                            m->desc->name, B, ws->max_batch);
    if (ws->kind != m->desc->kind || ws->n_layers != m->desc->n_layers)
        return fh_error_set(err, FH_ERR_FAILURE, "%s (%s): workspace built for another net",
                            what, m->desc->name);
    return FH_OK;
}

fh_status fh_mlp_forward(float *out, fh_mlp_ws *ws, const fh_mlp *m, const float *x, int B,
                         fh_error *err)
{
    fh_status st = check_batch(ws, m, B, "fh_mlp_forward", err);
    if (st != FH_OK)
        return st;
    const fh_net_desc *d = m->desc;
    int L = d->n_layers;
    memcpy(ws->act[0], x, (size_t)B * d->dims[0] * sizeof(float)); /* (B, dims[0]) */
    for (int l = 0; l < L; l++) {
        int in = d->dims[l], o = d->dims[l + 1];
        float *y = ws->act[l + 1]; /* (B, o) */
        int norm = has_norm(d, l);
        float *z = norm ? ws->norm_in[l] : y; /* the linear output; kept for LN's backward */
        fh_linear_forward(z, ws->act[l], fh_mlp_weight(m, m->params, l),
                          fh_mlp_bias(m, m->params, l), B, in, o);
        if (l == L - 1)
            break;
        if (norm)
            fh_layer_norm_forward(y, ws->norm_mean[l], ws->norm_rstd[l], z,
                                  fh_mlp_norm_gamma(m, m->params, l),
                                  fh_mlp_norm_beta(m, m->params, l), B, o, d->norm_eps);
        if (d->hidden_act == FH_ACT_RELU)
            fh_relu_forward(y, y, (size_t)B * o);
        else if (d->hidden_act == FH_ACT_LEAKY_RELU)
            fh_leaky_relu_forward(y, y, (size_t)B * o, d->leaky_slope);
    }
    if (out)
        memcpy(out, ws->act[L], (size_t)B * d->dims[L] * sizeof(float));
    return FH_OK;
}

fh_status fh_mlp_backward(float *dx, fh_mlp *m, fh_mlp_ws *ws, const float *dout, int B,
                          fh_error *err)
{
    fh_status st = check_batch(ws, m, B, "fh_mlp_backward", err);
    if (st != FH_OK)
        return st;
    const fh_net_desc *d = m->desc;
    const float *g = dout; /* (B, dims[l+1]) gradient w.r.t. layer l's output */
    int which = 0;
    for (int l = d->n_layers - 1; l >= 0; l--) {
        int in = d->dims[l], o = d->dims[l + 1];
        float *dw = fh_mlp_weight(m, m->grads, l), *db = fh_mlp_bias(m, m->grads, l);
        const float *w = fh_mlp_weight(m, m->params, l);
        if (l == 0) {
            fh_linear_backward(dx, dw, db, g, ws->act[0], w, B, in, o);
            break;
        }
        float *gin = ws->grad[which]; /* (B, in) gradient w.r.t. act[l] */
        fh_linear_backward_overwrite_dx(gin, dw, db, g, ws->act[l], w, B, in, o);
        /* act[l] is the post-activation output of layer l-1: mask by its sign (the sign
         * of the activation's input, LayerNorm's output when there is one) */
        const float *a = ws->act[l];
        size_t n = (size_t)B * in;
        if (d->hidden_act == FH_ACT_RELU) {
            for (size_t i = 0; i < n; i++)
                gin[i] = a[i] > 0.0f ? gin[i] : 0.0f;
        } else if (d->hidden_act == FH_ACT_LEAKY_RELU) {
            float s = d->leaky_slope;
            for (size_t i = 0; i < n; i++)
                gin[i] = a[i] > 0.0f ? gin[i] : s * gin[i];
        }
        if (!has_norm(d, l - 1)) {
            g = gin;
            which ^= 1;
            continue;
        }
        /* layer l-1's LayerNorm: its input gradient goes to the other buffer, which held
         * g (or was unused): g is dead once the linear backward above has consumed it.
         * gin's buffer is then free again for the next layer. */
        float *dz = ws->grad[which ^ 1];
        memset(dz, 0, n * sizeof(float));
        fh_layer_norm_backward(dz, fh_mlp_norm_gamma(m, m->grads, l - 1),
                               fh_mlp_norm_beta(m, m->grads, l - 1), gin,
                               ws->norm_in[l - 1], ws->norm_mean[l - 1], ws->norm_rstd[l - 1],
                               fh_mlp_norm_gamma(m, m->params, l - 1), B, in);
        g = dz;
    }
    return FH_OK;
}

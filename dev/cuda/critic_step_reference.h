/* critic_step_reference.h — critic_step_fused.cu's float64 reference of one critic step
 * (forward, the gradient of 0.5 * mean((v - target)^2), backward, torch's Adam), its
 * checks against central differences and a hand-worked Adam step (--cpu-check, no GPU),
 * and the per-tensor error the program reports. Host code only; included by
 * critic_step_fused.cu after common.h and its constants (N_LAYERS, DIMS, LR, BETA1,
 * BETA2, ADAM_EPS, ADAM_STEP), in a header of its own only to keep each file under 800
 * lines. */
#ifndef FOXHUNT_DEV_CRITIC_STEP_REFERENCE_H
#define FOXHUNT_DEV_CRITIC_STEP_REFERENCE_H

/* ==== float64 CPU reference (any layer widths, so --cpu-check can use a toy) ==== */
typedef struct {
    int n_layers, dims[N_LAYERS + 1];
    long off_w[N_LAYERS], off_b[N_LAYERS], n_params; /* W [out, in] then b [out], per layer */
} ref_net;

static ref_net ref_net_make(const int *dims, int n_layers)
{
    ref_net n;
    memset(&n, 0, sizeof n);
    n.n_layers = n_layers;
    long at = 0;
    for (int l = 0; l <= n_layers; l++)
        n.dims[l] = dims[l];
    for (int l = 0; l < n_layers; l++) {
        n.off_w[l] = at;
        at += (long)dims[l + 1] * dims[l];
        n.off_b[l] = at;
        at += dims[l + 1];
    }
    n.n_params = at;
    return n;
}

/* Forward: z[l] (rows, dims[l+1]) the pre-activations, h[l] (rows, dims[l]) layer l's
 * input (h[0] = x, h[l] = relu(z[l-1])). Returns the loss 0.5 * mean((z_last - t)^2). */
static double ref_forward(const ref_net *n, int rows, const double *x, const double *target,
                          const double *p, double **z, double **h)
{
    memcpy(h[0], x, sizeof(double) * rows * n->dims[0]);
    for (int l = 0; l < n->n_layers; l++) {
        int in = n->dims[l], out = n->dims[l + 1];
        const double *w = p + n->off_w[l], *b = p + n->off_b[l];
        for (int r = 0; r < rows; r++)
            for (int o = 0; o < out; o++) {
                double s = b[o];
                for (int i = 0; i < in; i++)
                    s += h[l][(long)r * in + i] * w[(long)o * in + i];
                z[l][(long)r * out + o] = s;
                if (l + 1 < n->n_layers)
                    h[l + 1][(long)r * out + o] = s > 0.0 ? s : 0.0;
            }
    }
    double loss = 0.0;
    for (int r = 0; r < rows; r++) {
        double e = z[n->n_layers - 1][r] - target[r];
        loss += 0.5 * e * e;
    }
    return loss / rows;
}

/* Backward into grad (n_params, zeroed here). The ReLU mask of z[l] is z > 0, except where
 * |z| < band and device_act is given: there the device's activation decides (device_act[l]
 * is the device's h[l + 1], float). *borrowed counts those elements. */
static void ref_backward(const ref_net *n, int rows, const double *target, const double *p,
                         double **z, double **h, const float *const *device_act, double band,
                         double *grad, long *borrowed)
{
    int last = n->n_layers - 1, widest = 0;
    for (int l = 0; l <= n->n_layers; l++)
        widest = n->dims[l] > widest ? n->dims[l] : widest;
    double *dz = (double *)host_alloc(sizeof(double) * rows * widest);
    double *da = (double *)host_alloc(sizeof(double) * rows * widest);
    memset(grad, 0, sizeof(double) * n->n_params);
    for (int r = 0; r < rows; r++)
        dz[r] = (z[last][r] - target[r]) / rows;
    for (int l = last; l >= 0; l--) {
        int in = n->dims[l], out = n->dims[l + 1];
        const double *w = p + n->off_w[l];
        double *gw = grad + n->off_w[l], *gb = grad + n->off_b[l];
        for (int r = 0; r < rows; r++)
            for (int o = 0; o < out; o++) {
                double d = dz[(long)r * out + o];
                gb[o] += d;
                for (int i = 0; i < in; i++)
                    gw[(long)o * in + i] += d * h[l][(long)r * in + i];
            }
        if (l == 0)
            break;
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < in; i++) {
                double s = 0.0;
                for (int o = 0; o < out; o++)
                    s += dz[(long)r * out + o] * w[(long)o * in + i];
                long at = (long)r * in + i;
                double zv = z[l - 1][at];
                int on = zv > 0.0;
                if (device_act && fabs(zv) < band) {
                    on = device_act[l - 1][at] > 0.0f;
                    (*borrowed)++;
                }
                da[at] = on ? s : 0.0;
            }
        memcpy(dz, da, sizeof(double) * rows * in);
    }
    free(dz);
    free(da);
}

/* torch.optim.Adam's step t (moments updated in place, then p). */
static void ref_adam(double *p, double *m, double *v, const double *g, long n, int t)
{
    double bc1 = 1.0 - pow(BETA1, t), bc2 = 1.0 - pow(BETA2, t);
    for (long i = 0; i < n; i++) {
        m[i] = BETA1 * m[i] + (1.0 - BETA1) * g[i];
        v[i] = BETA2 * v[i] + (1.0 - BETA2) * g[i] * g[i];
        p[i] -= LR / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + ADAM_EPS);
    }
}

typedef struct {
    double **z, **h;
} ref_ws;

static ref_ws ref_ws_alloc(const ref_net *n, int rows)
{
    ref_ws w;
    w.z = (double **)host_alloc(sizeof(double *) * n->n_layers);
    w.h = (double **)host_alloc(sizeof(double *) * n->n_layers);
    for (int l = 0; l < n->n_layers; l++) {
        w.z[l] = (double *)host_alloc(sizeof(double) * rows * n->dims[l + 1]);
        w.h[l] = (double *)host_alloc(sizeof(double) * rows * n->dims[l]);
    }
    return w;
}

static void ref_ws_free(const ref_net *n, ref_ws *w)
{
    for (int l = 0; l < n->n_layers; l++) {
        free(w->z[l]);
        free(w->h[l]);
    }
    free(w->z);
    free(w->h);
}

/* The problem: inputs O(1), weights scaled like the product's orthogonal init (gain
 * sqrt(2) hidden, 1 at the output, entries ~ gain / sqrt(max(in, out))), small random
 * biases (the product starts them at 0; nonzero here so their paths are checked), Adam
 * moments as if after some steps. */
typedef struct {
    int rows;
    float *x, *target, *params, *m, *v;
} problem;

static problem problem_make(const ref_net *n, int rows, uint64_t seed)
{
    problem pr;
    dev_rng rng = {seed};
    pr.rows = rows;
    pr.x = (float *)host_alloc(sizeof(float) * rows * n->dims[0]);
    pr.target = (float *)host_alloc(sizeof(float) * rows);
    pr.params = (float *)host_alloc(sizeof(float) * n->n_params);
    pr.m = (float *)host_alloc(sizeof(float) * n->n_params);
    pr.v = (float *)host_alloc(sizeof(float) * n->n_params);
    for (long i = 0; i < (long)rows * n->dims[0]; i++)
        pr.x[i] = dev_rng_uniform(&rng, -1.5f, 1.5f);
    for (int r = 0; r < rows; r++)
        pr.target[r] = dev_rng_uniform(&rng, -1.0f, 1.0f);
    for (int l = 0; l < n->n_layers; l++) {
        int in = n->dims[l], out = n->dims[l + 1];
        double gain = l + 1 == n->n_layers ? 1.0 : sqrt(2.0);
        float a = (float)(sqrt(3.0) * gain / sqrt((double)(in > out ? in : out)));
        for (long i = 0; i < (long)in * out; i++)
            pr.params[n->off_w[l] + i] = dev_rng_uniform(&rng, -a, a);
        for (int o = 0; o < out; o++)
            pr.params[n->off_b[l] + o] = dev_rng_uniform(&rng, -0.1f, 0.1f);
    }
    for (long i = 0; i < n->n_params; i++) {
        pr.m[i] = dev_rng_uniform(&rng, -1e-3f, 1e-3f);
        pr.v[i] = dev_rng_uniform(&rng, 0.0f, 1e-6f);
    }
    return pr;
}

static void problem_free(problem *pr)
{
    free(pr->x); free(pr->target); free(pr->params); free(pr->m); free(pr->v);
}

static double *to_double(const float *f, long n)
{
    double *d = (double *)host_alloc(sizeof(double) * n);
    for (long i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

/* ---- --cpu-check: the reference against central differences (runs without a GPU) ---- */

/* 1 when every ReLU of the forward at p has the same sign pattern as in `base`. */
static int same_pattern(const ref_net *n, int rows, double **z, double **base)
{
    for (int l = 0; l + 1 < n->n_layers; l++)
        for (long i = 0; i < (long)rows * n->dims[l + 1]; i++)
            if ((z[l][i] > 0.0) != (base[l][i] > 0.0))
                return 0;
    return 1;
}

/* The loss is quadratic in any one parameter between ReLU kinks, so a central difference
 * is exact there up to rounding (~1e-16 * loss / h): tolerance 1e-8 + 1e-6 |g|.
 * Parameters whose +-h moves a ReLU across its kink are skipped and counted. */
static int fd_check(const char *name, const int *dims, int n_layers, int per_tensor)
{
    const int rows = 4;
    const double h_step = 1e-5;
    ref_net n = ref_net_make(dims, n_layers);
    problem pr = problem_make(&n, rows, 99);
    double *x = to_double(pr.x, (long)rows * dims[0]), *t = to_double(pr.target, rows);
    double *p = to_double(pr.params, n.n_params);
    double *grad = (double *)host_alloc(sizeof(double) * n.n_params);
    ref_ws base = ref_ws_alloc(&n, rows), ws = ref_ws_alloc(&n, rows);
    ref_forward(&n, rows, x, t, p, base.z, base.h);
    ref_backward(&n, rows, t, p, base.z, base.h, NULL, 0.0, grad, NULL);
    dev_rng rng = {7};
    long checked = 0, skipped = 0, failed = 0;
    double worst = 0.0;
    for (int l = 0; l < n_layers; l++)
        for (int kind = 0; kind < 2; kind++) { /* weight, bias */
            long off = kind ? n.off_b[l] : n.off_w[l];
            long size = kind ? dims[l + 1] : (long)dims[l + 1] * dims[l];
            long count = per_tensor && per_tensor < size ? per_tensor : size;
            for (long k = 0; k < count; k++) {
                long i = off + (count == size ? k : (long)(dev_rng_next(&rng) % (uint64_t)size));
                double keep = p[i];
                p[i] = keep + h_step;
                double up = ref_forward(&n, rows, x, t, p, ws.z, ws.h);
                int same = same_pattern(&n, rows, ws.z, base.z);
                p[i] = keep - h_step;
                double down = ref_forward(&n, rows, x, t, p, ws.z, ws.h);
                same &= same_pattern(&n, rows, ws.z, base.z);
                p[i] = keep;
                if (!same) {
                    skipped++;
                    continue;
                }
                double fd = (up - down) / (2.0 * h_step), d = fabs(fd - grad[i]);
                checked++;
                worst = d > worst ? d : worst;
                if (!(d <= 1e-8 + 1e-6 * fabs(grad[i]))) {
                    if (!failed)
                        printf("  first mismatch: layer %d %s index %ld: analytic %.10g, "
                               "central difference %.10g\n", l, kind ? "bias" : "weight",
                               i - off, grad[i], fd);
                    failed++;
                }
            }
        }
    /* too many skips would leave the check checking little */
    int ok = failed == 0 && skipped * 10 <= checked;
    printf("cpu-check %-28s %ld parameters against central differences (h %.0e), %ld at a "
           "ReLU kink skipped, max |err| %.2e  %s\n", name, checked, h_step, skipped, worst,
           ok ? "ok" : "FAIL");
    ref_ws_free(&n, &base);
    ref_ws_free(&n, &ws);
    free(x); free(t); free(p); free(grad);
    problem_free(&pr);
    return ok;
}

/* Adam against a step worked by hand: p 0.5, m 0.1, v 0.04, g 0.5, t 2 ->
 * m 0.09 + 0.05 = 0.14, v 0.03996 + 0.00025 = 0.04021, m^ = 0.14 / 0.19 = 0.7368421,
 * sqrt(v^) = sqrt(0.04021 / 0.001999) = 4.4849813, p = 0.5 - 3e-4 * 0.7368421 /
 * (4.4849813 + 1e-5) = 0.49995071281. */
static int adam_check(void)
{
    double p = 0.5, m = 0.1, v = 0.04, g = 0.5;
    ref_adam(&p, &m, &v, &g, 1, 2);
    int ok = fabs(m - 0.14) < 1e-12 && fabs(v - 0.04021) < 1e-12 &&
             fabs(p - 0.49995071281) < 1e-11;
    printf("cpu-check adam against a hand-worked step: p %.12f m %.12f v %.12f  %s\n", p, m, v,
           ok ? "ok" : "FAIL");
    return ok;
}

static int cpu_check(void)
{
    static const int toy[N_LAYERS + 1] = {5, 7, 6, 5, 4, 3, 1};
    int ok = fd_check("6-layer toy 5-7-6-5-4-3-1", toy, N_LAYERS, 0);
    ok &= fd_check("critic 54-512-...-64-1", DIMS, N_LAYERS, 16);
    ok &= adam_check();
    return ok ? 0 : 1;
}

/* max |got - want| over max |want| (over 1 where want is all zero); base given: the
 * step got - base against want - base, each |got - want| less one float spacing at want
 * (the new parameter is stored in float: that rounding, up to ~5e-5 of a 3e-4 step on a
 * 0.2 weight, is in any fp32 implementation). NaN anywhere gives NaN, which fails. */
static double tensor_error(const float *got, const double *want, const float *base, long n)
{
    double worst = 0.0, norm = 0.0;
    for (long i = 0; i < n; i++) {
        double g = got[i], w = want[i], d = fabs(g - w);
        if (base) {
            float wf = fabsf((float)w);
            d = fmax(0.0, d - ((double)nextafterf(wf, INFINITY) - wf));
            w -= base[i];
        }
        if (isnan(d) || isnan(w))
            return NAN;
        worst = fmax(worst, d);
        norm = fmax(norm, fabs(w));
    }
    return worst / (norm > 0.0 ? norm : 1.0);
}

/* What the device step left: the gradients, parameters and moments after Adam, the value
 * column, the hidden activations act[l] = relu(z[l]) (rows, dims[l + 1]). */
typedef struct {
    float *grads, *params, *m, *v, *value, *act[N_LAYERS - 1];
} step_result;

static step_result step_result_alloc(const ref_net *n, int rows)
{
    step_result r;
    float **whole[4] = {&r.grads, &r.params, &r.m, &r.v};
    for (int k = 0; k < 4; k++)
        *whole[k] = (float *)host_alloc(sizeof(float) * n->n_params);
    r.value = (float *)host_alloc(sizeof(float) * rows);
    for (int l = 0; l + 1 < n->n_layers; l++)
        r.act[l] = (float *)host_alloc(sizeof(float) * rows * n->dims[l + 1]);
    return r;
}

static void step_result_free(const ref_net *n, step_result *r)
{
    free(r->grads); free(r->params); free(r->m); free(r->v); free(r->value);
    for (int l = 0; l + 1 < n->n_layers; l++)
        free(r->act[l]);
}

/* The reference's backward (ReLU masks within `band` of zero from got->act) and Adam step
 * from the problem's state; prints every tensor's error; 1 when all are within tol. */
static int check_step(const ref_net *n, const problem *pr, const ref_ws *ws, const double *t,
                      const double *p0, const step_result *got, double tol, double band)
{
    long np = n->n_params, borrowed = 0;
    int rows = pr->rows, ok = 1;
    double *g = (double *)host_alloc(sizeof(double) * np), *p = to_double(pr->params, np);
    double *m = to_double(pr->m, np), *v = to_double(pr->v, np);
    ref_backward(n, rows, t, p0, ws->z, ws->h, got->act, band, g, &borrowed);
    ref_adam(p, m, v, g, np, ADAM_STEP);
    char grads[512] = "", steps[512] = "";
    double worst_m = 0.0, worst_v = 0.0;
    for (int k = 0; k < 2 * n->n_layers; k++) {
        int l = k / 2, bias = k % 2;
        long off = bias ? n->off_b[l] : n->off_w[l];
        long size = bias ? n->dims[l + 1] : (long)n->dims[l + 1] * n->dims[l];
        double eg = tensor_error(got->grads + off, g + off, NULL, size);
        double es = tensor_error(got->params + off, p + off, pr->params + off, size);
        double em = tensor_error(got->m + off, m + off, NULL, size);
        double ev = tensor_error(got->v + off, v + off, NULL, size);
        ok &= eg <= tol && es <= tol && em <= tol && ev <= tol; /* NaN fails */
        worst_m = isnan(em) || isnan(worst_m) ? NAN : fmax(worst_m, em);
        worst_v = isnan(ev) || isnan(worst_v) ? NAN : fmax(worst_v, ev);
        size_t at = strlen(grads);
        snprintf(grads + at, sizeof grads - at, " %s%d %.1e", bias ? "b" : "W", l, eg);
        at = strlen(steps);
        snprintf(steps + at, sizeof steps - at, " %s%d %.1e", bias ? "b" : "W", l, es);
    }
    double e_value = tensor_error(got->value, ws->z[n->n_layers - 1], NULL, rows);
    ok &= e_value <= tol;
    printf("   errors (max |got - want| / max |want| per tensor, tolerance %.0e; %ld ReLU "
           "masks within %.0e of zero taken from the device)\n", tol, borrowed, band);
    printf("   gradient%s\n   step    %s\n   value %.1e  adam m %.1e  adam v %.1e\n", grads,
           steps, e_value, worst_m, worst_v);
    free(g); free(p); free(m); free(v);
    return ok;
}

#endif /* FOXHUNT_DEV_CRITIC_STEP_REFERENCE_H */

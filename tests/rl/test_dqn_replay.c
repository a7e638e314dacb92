/* test_dqn_replay.c — DQN's replay ring (issue 18; SPEC §7): the host PCG32 against the
 * reference generator's published outputs, the ring's wrap-around slot by slot, n-step
 * returns against hand computations, uniform sampling by a chi-square test, gather, and
 * the errors. One ctest entry per case (test_dqn_replay CASE; tests/dqn/test_cases.h). */
#include <stdint.h>
#include <string.h>

#include "dqn/test_cases.h"
#include "foxhunt/dqn.h"
#include "test_util.h"

/* Fills a batch with values that name their origin: tag (the batch), i = n*L + t and the
 * feature j, so a slot's contents tell which transition landed there. */
static float state_value(int tag, int i, int j) { return (float)(tag * 100000 + i * 100 + j); }
static float next_value(int tag, int i, int j) { return -state_value(tag, i, j) - 1.0f; }

static void fill_batch(fh_transition_batch *b, int tag)
{
    int nl = b->n_episodes * b->n_steps;
    for (int i = 0; i < nl; i++) {
        for (int j = 0; j < FH_STATE_DIM; j++) {
            b->states[i * FH_STATE_DIM + j] = state_value(tag, i, j);
            b->next_states[i * FH_STATE_DIM + j] = next_value(tag, i, j);
        }
        b->actions[i] = tag * 100 + i;
        b->rewards[i] = (float)(tag * 10 + i);
        b->terminal[i] = 0;
        b->truncated[i] = 0;
        b->q_taken[i] = 0.0f;
    }
}

/* Slot s holds batch tag's transition i, with s' = next_states of step last (same tag). */
static int slot_is(const fh_replay *r, int s, int tag, int i, int last)
{
    for (int j = 0; j < FH_STATE_DIM; j++) {
        if (r->states[s * FH_STATE_DIM + j] != state_value(tag, i, j))
            return 0;
        if (r->next_states[s * FH_STATE_DIM + j] != next_value(tag, last, j))
            return 0;
    }
    return r->actions[s] == tag * 100 + i;
}

static void test_pcg32_reference(void)
{
    /* pcg32-demo (O'Neill's pcg-c-basic): pcg32_srandom_r(&rng, 42u, 54u), then
     * pcg32_random_r six times. */
    static const uint32_t expect[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                       0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    fh_rng rng;
    fh_pcg32_seed(&rng, 42, 54);
    for (int k = 0; k < 6; k++) {
        uint32_t got = fh_pcg32_next(&rng);
        CHECK_MSG(got == expect[k], "pcg32 output %d: 0x%08x, expected 0x%08x", k, got,
                  expect[k]);
    }
    /* uniform_int is the multiply-shift of the next output. */
    fh_rng a, b;
    fh_pcg32_seed(&a, 7, 3);
    b = a;
    int ok = 1;
    for (int k = 0; k < 1000; k++) {
        int n = 1 + k * 37;
        int got = fh_pcg32_uniform_int(&a, n);
        int want = (int)(((uint64_t)fh_pcg32_next(&b) * (uint64_t)n) >> 32);
        ok &= got == want && got >= 0 && got < n;
    }
    CHECK(ok);
}

/* Three batches of 3 into 5 slots: 9 transitions, the first 4 overwritten. */
static void test_ring_wraps(void)
{
    fh_error err;
    fh_error_clear(&err);
    fh_replay r;
    fh_transition_batch b;
    CHECK(fh_replay_init(&r, 5, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&b, 1, 3, &err) == FH_OK);
    int sizes[3] = {3, 5, 5}, heads[3] = {3, 1, 4};
    for (int tag = 1; tag <= 3; tag++) {
        fill_batch(&b, tag);
        CHECK(fh_replay_push_batch(&r, &b, 1, 0.5f, &err) == FH_OK);
        CHECK_MSG(r.size == sizes[tag - 1] && r.head == heads[tag - 1],
                  "after push %d: size %d head %d, expected %d %d", tag, r.size, r.head,
                  sizes[tag - 1], heads[tag - 1]);
    }
    CHECK(r.n_pushed == 9);
    /* pushed in order (1,0) (1,1) (1,2) (2,0) (2,1) (2,2) (3,0) (3,1) (3,2) to slots
     * 0 1 2 3 4 0 1 2 3: slot 4 = (2,1) is the oldest (= head), then 0 = (2,2), 1..3 =
     * batch 3. With n_step 1, gamma 0.5 and no episode ends: G = r, d = 0.5, s' = the
     * step's own next_states. */
    int tag_at[5] = {2, 3, 3, 3, 2}, i_at[5] = {2, 0, 1, 2, 1};
    for (int s = 0; s < 5; s++) {
        CHECK_MSG(slot_is(&r, s, tag_at[s], i_at[s], i_at[s]), "slot %d", s);
        CHECK(r.returns[s] == (float)(tag_at[s] * 10 + i_at[s]));
        CHECK(r.discounts[s] == 0.5f);
    }
    /* oldest first from head: (2,1) (2,2) (3,0) (3,1) (3,2) */
    int order_tag[5] = {2, 2, 3, 3, 3}, order_i[5] = {1, 2, 0, 1, 2};
    for (int k = 0; k < 5; k++) {
        int s = (r.head + k) % r.capacity;
        CHECK_MSG(slot_is(&r, s, order_tag[k], order_i[k], order_i[k]), "age %d", k);
    }
    fh_transition_batch_free(&b);
    fh_replay_free(&r);
    fh_replay_free(&r); /* a freed ring frees again */
}

/* A push larger than the ring: only its last capacity transitions stay, head moves by
 * the whole push. Ring of 5 holding 2, then 3 x 4 = 12: items 7..11 survive at slots
 * (2 + i) % 5 = 4 0 1 2 3, head (2 + 12) % 5 = 4. */
static void test_push_larger_than_ring(void)
{
    fh_error err;
    fh_error_clear(&err);
    fh_replay r;
    fh_transition_batch small, big;
    CHECK(fh_replay_init(&r, 5, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&small, 1, 2, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&big, 3, 4, &err) == FH_OK);
    fill_batch(&small, 1);
    fill_batch(&big, 2);
    CHECK(fh_replay_push_batch(&r, &small, 2, 0.5f, &err) == FH_OK);
    CHECK(r.size == 2 && r.head == 2);
    CHECK(fh_replay_push_batch(&r, &big, 2, 0.5f, &err) == FH_OK);
    CHECK(r.size == 5 && r.head == 4 && r.n_pushed == 14);
    /* n_step 2, rows of 4: items 7 (row 1, t 3: row end) s' = next 7, G = r7, d = 0.5;
     * 8 (row 2, t 0) s' = next 9, G = r8 + r9/2, d = 0.25; 9 -> next 10; 10 -> next 11;
     * 11 (row end) -> next 11, d = 0.5. */
    int item[5] = {7, 8, 9, 10, 11}, last[5] = {7, 9, 10, 11, 11};
    float G[5] = {27.0f, 28.0f + 14.5f, 29.0f + 15.0f, 30.0f + 15.5f, 31.0f};
    float d[5] = {0.5f, 0.25f, 0.25f, 0.25f, 0.5f};
    for (int k = 0; k < 5; k++) {
        int s = (2 + item[k]) % 5;
        CHECK_MSG(slot_is(&r, s, 2, item[k], last[k]), "item %d in slot %d", item[k], s);
        CHECK_MSG(r.returns[s] == G[k] && r.discounts[s] == d[k],
                  "item %d: G %g d %g, expected %g %g", item[k], (double)r.returns[s],
                  (double)r.discounts[s], (double)G[k], (double)d[k]);
    }
    fh_transition_batch_free(&small);
    fh_transition_batch_free(&big);
    fh_replay_free(&r);
}

/* n-step returns by hand: 2 rows x 5 steps, rewards 1 2 4 8 16 in both, n_step 3.
 * Row 0: a terminal at t = 1. Row 1: a truncation at t = 3. Both rows end mid-episode. */
static void test_n_step_by_hand(void)
{
    fh_error err;
    fh_error_clear(&err);
    fh_replay r;
    fh_transition_batch b;
    CHECK(fh_replay_init(&r, 10, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&b, 2, 5, &err) == FH_OK);
    fill_batch(&b, 0);
    const float rew[5] = {1, 2, 4, 8, 16};
    for (int i = 0; i < 10; i++)
        b.rewards[i] = rew[i % 5];
    b.terminal[1] = 1;      /* (0, 1) */
    b.truncated[5 + 3] = 1; /* (1, 3) */

    /* gamma = 0.5 (exact in binary, so the sums are exact):
     * row 0  t0: 1 + .5*2 = 2 (terminal at t1), d 0, s' next(0,1)
     *        t1: 2 (terminal), d 0, s' next(0,1)
     *        t2: 4 + .5*8 + .25*16 = 12 (3 rewards, also the row end), d .125, s' next(0,4)
     *        t3: 8 + .5*16 = 16 (row end), d .25, s' next(0,4)
     *        t4: 16 (row end), d .5, s' next(0,4)
     * row 1  t0: 1 + .5*2 + .25*4 = 3 (3 rewards), d .125, s' next(1,2)
     *        t1: 2 + .5*4 + .25*8 = 6 (3 rewards, the third truncated), d .125, s' next(1,3)
     *        t2: 4 + .5*8 = 8 (truncated at t3), d .25, s' next(1,3)
     *        t3: 8 (truncated), d .5, s' next(1,3)
     *        t4: 16 (row end; a new episode began at t4), d .5, s' next(1,4) */
    const float G_half[10] = {2, 2, 12, 16, 16, 3, 6, 8, 8, 16};
    const float d_half[10] = {0, 0, 0.125f, 0.25f, 0.5f, 0.125f, 0.125f, 0.25f, 0.5f, 0.5f};
    const int last[10] = {1, 1, 4, 4, 4, 7, 8, 8, 8, 9};
    CHECK(fh_replay_push_batch(&r, &b, 3, 0.5f, &err) == FH_OK);
    for (int i = 0; i < 10; i++) {
        CHECK_MSG(r.returns[i] == G_half[i] && r.discounts[i] == d_half[i],
                  "gamma .5, item %d: G %g d %g, expected %g %g", i, (double)r.returns[i],
                  (double)r.discounts[i], (double)G_half[i], (double)d_half[i]);
        CHECK_MSG(slot_is(&r, i, 0, i, last[i]), "gamma .5, item %d: s or s'", i);
    }

    /* gamma = 0.9, the same windows:
     * row 0  t0: 1 + .9*2 = 2.8, d 0        t1: 2, d 0
     *        t2: 4 + .9*8 + .81*16 = 4 + 7.2 + 12.96 = 24.16, d .729
     *        t3: 8 + .9*16 = 22.4, d .81     t4: 16, d .9
     * row 1  t0: 1 + .9*2 + .81*4 = 1 + 1.8 + 3.24 = 6.04, d .729
     *        t1: 2 + .9*4 + .81*8 = 2 + 3.6 + 6.48 = 12.08, d .729
     *        t2: 4 + .9*8 = 11.2, d .81      t3: 8, d .9      t4: 16, d .9 */
    const double G_9[10] = {2.8, 2, 24.16, 22.4, 16, 6.04, 12.08, 11.2, 8, 16};
    const double d_9[10] = {0, 0, 0.729, 0.81, 0.9, 0.729, 0.729, 0.81, 0.9, 0.9};
    CHECK(fh_replay_push_batch(&r, &b, 3, 0.9f, &err) == FH_OK);
    CHECK(r.head == 0 && r.size == 10); /* exactly one lap: slot i = item i again */
    for (int i = 0; i < 10; i++) {
        CHECK_CLOSE(r.returns[i], G_9[i], 0.0, 1e-6);
        CHECK_CLOSE(r.discounts[i], d_9[i], 0.0, 1e-6);
        CHECK_MSG(slot_is(&r, i, 0, i, last[i]), "gamma .9, item %d: s or s'", i);
    }

    /* A step both terminal and truncated counts as terminal: no bootstrap. */
    b.truncated[1] = 1;
    CHECK(fh_replay_push_batch(&r, &b, 1, 0.9f, &err) == FH_OK);
    CHECK(r.returns[1] == 2.0f && r.discounts[1] == 0.0f);
    CHECK(r.returns[0] == 1.0f && r.discounts[0] == 0.9f); /* 1-step: r0, s' next(0,0) */
    CHECK(slot_is(&r, 0, 0, 0, 0));
    fh_transition_batch_free(&b);
    fh_replay_free(&r);
}

/* Sampling uniform over a full ring of 100: 200,000 draws, 2,000 expected per slot.
 * Pearson's X^2 = sum (O - E)^2 / E has 99 degrees of freedom; its 0.999 quantile is
 * 148.23, so a fair sampler fails with probability 0.001, and with the seed fixed the
 * outcome is deterministic (it passed once, it passes always; a biased sampler, e.g. one
 * that skips a slot, gives X^2 > 2,000). */
static void test_sampling_uniform(void)
{
    enum { C = 100, DRAWS = 200000, CHUNK = 1000 };
    fh_error err;
    fh_error_clear(&err);
    fh_replay r;
    fh_transition_batch b;
    CHECK(fh_replay_init(&r, C, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&b, 4, 25, &err) == FH_OK);
    fill_batch(&b, 1);
    CHECK(fh_replay_push_batch(&r, &b, 3, 0.99f, &err) == FH_OK);
    CHECK(r.size == C);

    fh_rng rng, copy;
    fh_pcg32_seed(&rng, 20240518, 11);
    copy = rng;
    static int32_t idx[CHUNK];
    long long counts[C] = {0};
    int same = 1, in_range = 1;
    for (int c = 0; c < DRAWS / CHUNK; c++) {
        CHECK(fh_replay_sample(&r, &rng, CHUNK, idx, &err) == FH_OK);
        for (int k = 0; k < CHUNK; k++) {
            same &= idx[k] == fh_pcg32_uniform_int(&copy, C); /* exactly the device draw */
            in_range &= idx[k] >= 0 && idx[k] < C;
            if (idx[k] >= 0 && idx[k] < C)
                counts[idx[k]]++;
        }
    }
    CHECK(same);
    CHECK(in_range);
    double expect = (double)DRAWS / C, x2 = 0.0;
    for (int s = 0; s < C; s++)
        x2 += ((double)counts[s] - expect) * ((double)counts[s] - expect) / expect;
    CHECK_MSG(x2 < 148.23, "chi-square %.2f >= 148.23 (99 dof, p = 0.001)", x2);
    printf("sampling: chi-square %.2f over %d slots, %d draws (critical 148.23 at p = 0.001)\n",
           x2, C, DRAWS);

    /* A partly filled ring samples only its filled slots, and all of them. */
    fh_replay p;
    fh_transition_batch small;
    CHECK(fh_replay_init(&p, C, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&small, 1, 37, &err) == FH_OK);
    fill_batch(&small, 2);
    CHECK(fh_replay_push_batch(&p, &small, 1, 0.99f, &err) == FH_OK);
    int seen[37] = {0}, ok = 1;
    for (int c = 0; c < 10; c++) {
        CHECK(fh_replay_sample(&p, &rng, CHUNK, idx, &err) == FH_OK);
        for (int k = 0; k < CHUNK; k++) {
            ok &= idx[k] >= 0 && idx[k] < 37;
            if (idx[k] >= 0 && idx[k] < 37)
                seen[idx[k]] = 1;
        }
    }
    CHECK(ok);
    int n_seen = 0;
    for (int s = 0; s < 37; s++)
        n_seen += seen[s];
    CHECK(n_seen == 37);
    fh_transition_batch_free(&small);
    fh_replay_free(&p);
    fh_transition_batch_free(&b);
    fh_replay_free(&r);
}

static void test_gather(void)
{
    fh_error err;
    fh_error_clear(&err);
    fh_replay r;
    fh_transition_batch b;
    fh_replay_minibatch mb;
    CHECK(fh_replay_init(&r, 8, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&b, 2, 3, &err) == FH_OK);
    CHECK(fh_replay_minibatch_alloc(&mb, 4, &err) == FH_OK);
    fill_batch(&b, 5);
    CHECK(fh_replay_push_batch(&r, &b, 2, 0.5f, &err) == FH_OK);
    const int32_t idx[4] = {5, 0, 5, 3};
    CHECK(fh_replay_gather(&r, idx, 4, &mb, &err) == FH_OK);
    CHECK(mb.size == 4);
    int ok = 1;
    for (int k = 0; k < 4; k++) {
        int s = idx[k];
        ok &= memcmp(mb.states + k * FH_STATE_DIM, r.states + s * FH_STATE_DIM,
                     FH_STATE_DIM * sizeof(float)) == 0;
        ok &= memcmp(mb.next_states + k * FH_STATE_DIM, r.next_states + s * FH_STATE_DIM,
                     FH_STATE_DIM * sizeof(float)) == 0;
        ok &= mb.actions[k] == r.actions[s] && mb.returns[k] == r.returns[s] &&
              mb.discounts[k] == r.discounts[s];
    }
    CHECK(ok);
    /* slot 5 = (row 1, t 2), the row's end: G = r5 = 55, d = .5; slot 3 = (1, 0):
     * G = r3 + .5 r4 = 53 + 27 = 80, d = .25 */
    CHECK(mb.returns[0] == 55.0f && mb.discounts[0] == 0.5f);
    CHECK(mb.returns[3] == 80.0f && mb.discounts[3] == 0.25f);

    /* Errors leave mb untouched and say what is wrong. */
    const int32_t bad[2] = {1, 6}; /* 6 slots filled: 6 is outside */
    CHECK(fh_replay_gather(&r, bad, 2, &mb, &err) == FH_ERR_FAILURE);
    CHECK(strstr(err.message, "outside") != NULL);
    CHECK(mb.size == 4);
    CHECK(fh_replay_gather(&r, idx, 5, &mb, &err) == FH_ERR_FAILURE);
    fh_replay_minibatch_free(&mb);
    fh_transition_batch_free(&b);
    fh_replay_free(&r);
}

static void test_errors(void)
{
    fh_error err;
    fh_error_clear(&err);
    fh_replay r;
    fh_transition_batch b;
    fh_rng rng;
    int32_t idx[4];
    fh_pcg32_seed(&rng, 1, 1);
    CHECK(fh_replay_init(&r, 0, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "capacity") != NULL);
    CHECK(fh_transition_batch_alloc(&b, 0, 5, &err) == FH_ERR_INPUT);
    CHECK(fh_replay_init(&r, 4, &err) == FH_OK);
    CHECK(fh_replay_sample(&r, &rng, 4, idx, &err) == FH_ERR_FAILURE); /* empty */
    CHECK(strstr(err.message, "empty") != NULL);
    CHECK(fh_transition_batch_alloc(&b, 1, 2, &err) == FH_OK);
    fill_batch(&b, 0);
    CHECK(fh_replay_push_batch(&r, &b, 0, 0.9f, &err) == FH_ERR_INPUT);
    CHECK(fh_replay_push_batch(&r, &b, 1, 1.5f, &err) == FH_ERR_INPUT);
    CHECK(fh_replay_push_batch(&r, &b, 1, NAN, &err) == FH_ERR_INPUT);
    CHECK(r.size == 0 && r.head == 0); /* refused pushes change nothing */
    fh_replay empty;
    memset(&empty, 0, sizeof empty);
    CHECK(fh_replay_push_batch(&empty, &b, 1, 0.9f, &err) == FH_ERR_FAILURE);
    fh_transition_batch_free(&b);
    fh_replay_free(&r);
}

static const fh_test_case CASES[] = {
    {"pcg32_reference", test_pcg32_reference},
    {"ring_wraps", test_ring_wraps},
    {"push_larger_than_ring", test_push_larger_than_ring},
    {"n_step_by_hand", test_n_step_by_hand},
    {"sampling_uniform", test_sampling_uniform},
    {"gather", test_gather},
    {"errors", test_errors},
};
FH_TEST_CASES_MAIN(CASES)

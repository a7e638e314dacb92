/* test_schedule.c — the per-iteration schedules (train_config.h) against hand-computed
 * values: fh_train_config_lr and fh_train_config_ent_coef decay linearly to 0 over the
 * run, CleanRL's (1 - (it - 1) / iterations) x value, only when anneal_lr / anneal_ent
 * is on, each on its own switch; off, they return the configured value itself (the
 * same double: a run without them is the run before them). And weight_decay's range:
 * a negative one is refused naming the key, and one with lr * weight_decay >= 1 by the
 * config check (AdamW's factor would flip the weights' signs). */
#include <string.h>

#include "foxhunt/train_config.h"
#include "test_util.h"

static void test_schedules(void)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    CHECK(cfg.anneal_ent == 0 && cfg.weight_decay == 0.0); /* defaults: off */
    cfg.iterations = 4;
    cfg.lr = 1e-3;
    cfg.ent_coef = 0.02;
    /* iteration 1..4 of 4: fractions 1, 3/4, 1/2, 1/4 */
    const double fraction[4] = {1.0, 0.75, 0.5, 0.25};
    cfg.anneal_lr = 0;
    cfg.anneal_ent = 1;
    for (int it = 1; it <= 4; it++) {
        CHECK_CLOSE(fh_train_config_ent_coef(&cfg, it), 0.02 * fraction[it - 1], 0, 1e-15);
        CHECK(fh_train_config_lr(&cfg, it) == 1e-3); /* anneal_lr's own switch */
    }
    CHECK_CLOSE(fh_train_config_ent_coef(&cfg, 3), 0.01, 0, 1e-15);
    cfg.anneal_lr = 1;
    cfg.anneal_ent = 0;
    for (int it = 1; it <= 4; it++) {
        CHECK_CLOSE(fh_train_config_lr(&cfg, it), 1e-3 * fraction[it - 1], 0, 1e-15);
        CHECK(fh_train_config_ent_coef(&cfg, it) == 0.02); /* exactly, not x 1.0 */
    }
    /* both on: the same fraction (a resume at iteration K continues from K's) */
    cfg.anneal_ent = 1;
    cfg.iterations = 10;
    CHECK_CLOSE(fh_train_config_lr(&cfg, 7), 1e-3 * 0.4, 0, 1e-15);
    CHECK_CLOSE(fh_train_config_ent_coef(&cfg, 7), 0.02 * 0.4, 0, 1e-15);
    CHECK_CLOSE(fh_train_config_ent_coef(&cfg, 10), 0.002, 0, 1e-15); /* last: 1/K of it */
    /* past the run's end (foxhunt update --iteration K > iterations): 0, never negative */
    CHECK(fh_train_config_ent_coef(&cfg, 11) == 0.0 && fh_train_config_lr(&cfg, 11) == 0.0);
    CHECK(fh_train_config_ent_coef(&cfg, 25) == 0.0 && fh_train_config_lr(&cfg, 25) == 0.0);
}

static void test_ranges(void)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_error err;
    fh_error_clear(&err);
    const fh_config_field *wd = fh_config_field_find("weight_decay");
    const fh_config_field *ae = fh_config_field_find("anneal_ent");
    CHECK(wd && ae && !strcmp(wd->section, "ppo") && !strcmp(ae->section, "ppo"));
    if (!wd || !ae)
        return;
    CHECK(fh_config_field_set(wd, &cfg, "-0.1", &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "weight_decay") && strstr(err.message, "out of range"),
              "%s", err.message);
    CHECK(fh_config_field_set(wd, &cfg, "0.01", &err) == FH_OK && cfg.weight_decay == 0.01);
    CHECK(fh_config_field_set(ae, &cfg, "true", &err) == FH_OK && cfg.anneal_ent == 1);
    /* the saved config round-trips both */
    char *json = fh_train_config_to_json(&cfg);
    fh_train_config back;
    fh_train_config_default(&back);
    CHECK(json && fh_train_config_from_json(json, &back, &err) == FH_OK);
    CHECK(back.weight_decay == 0.01 && back.anneal_ent == 1);
    free(json);
    /* the config check: lr * weight_decay >= 1 would flip the weights' signs */
    CHECK(fh_train_config_validate(&cfg, &err) == FH_OK);
    cfg.lr = 0.01;
    cfg.weight_decay = 100.0;
    CHECK(fh_train_config_validate(&cfg, &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "weight_decay 100 with lr 0.01") &&
                  strstr(err.message, "below 1 / lr = 100"), "%s", err.message);
    cfg.weight_decay = 99.0;
    CHECK(fh_train_config_validate(&cfg, &err) == FH_OK);
    /* a learning rate given on its own (foxhunt update --lr) is checked the same way, in
     * the float arithmetic the optimisers use: 1 - 0.5 * 2 = 0, and a product a hair
     * below 1 in double that rounds to 1 in float */
    CHECK(fh_train_config_check_decay(0.5, 2.0, &err) == FH_ERR_INPUT);
    CHECK(fh_train_config_check_decay(0.5, 2.0 - 1e-12, &err) == FH_ERR_INPUT);
    CHECK(fh_train_config_check_decay(0.5, 1.9, &err) == FH_OK);
    CHECK(fh_train_config_check_decay(1.0, 0.0, &err) == FH_OK); /* no decay: no check */
}

int main(void)
{
    test_schedules();
    test_ranges();
    return fh_test_finish();
}

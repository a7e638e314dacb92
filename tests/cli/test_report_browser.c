/* test_report_browser.c — the tear sheet rendered by a real headless browser (Debian's
 * chromium-headless-shell, which scripts/setup.sh installs; skips (77) saying so when
 * no chromium is found; FOXHUNT_CHROMIUM names another binary). A tiny CPU run, then
 * `foxhunt eval --report`; chromium loads the page from disk with no network and dumps
 * its DOM after the scripts ran. The page's own script (src/report/tear_sheet.js) marks
 * each chart div rendered when its dygraph holds rows and a canvas has a painted pixel,
 * and records on <body> "n/expected" and every error, console error or warning it saw:
 * every chart must render and nothing may be reported. The same page with the dygraphs
 * script emptied must fail that check (no chart, an error), so the check can fail.
 * Finally a screenshot of the whole page, report_browser.png beside this test's binary
 * (with the page, report_browser.html). The parts added for issue 36 must be there
 * and drawn: the price chart with the trades, rolling volatility, the risk table, the
 * worst drawdowns, the yearly bars, the settings tables; the equity axis labels at least
 * three ticks; no dygraphs roller box inside a chart. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include "report_fixture.h"

#define BROWSER_SECONDS 120

static const char *find_chromium(void)
{
    const char *env = getenv("FOXHUNT_CHROMIUM");
    if (env && env[0])
        return access(env, X_OK) == 0 ? env : NULL;
    static const char *const candidates[] = {
        "/usr/bin/chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell",
        "/usr/bin/chromium", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable",
    };
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (access(candidates[i], X_OK) == 0)
            return candidates[i];
    return NULL;
}

/* Runs chromium on file://page with the extra flags, stdout and stderr to files; kills
 * it after BROWSER_SECONDS. Returns its exit status (-2 on the time limit). */
static int run_chromium(const char *chromium, const char *dir, const char *page,
                        const char *flag1, const char *flag2, const char *out,
                        const char *err)
{
    char url[700], profile[400];
    snprintf(url, sizeof url, "file://%s", page);
    snprintf(profile, sizeof profile, "--user-data-dir=%s/chromium-profile", dir);
    char *argv[20];
    int n = 0;
    const char *flags[] = {"--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
                           "--hide-scrollbars", "--force-device-scale-factor=1",
                           "--enable-logging=stderr", "--v=0", profile, flag1, flag2};
    argv[n++] = (char *)chromium;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i])
            argv[n++] = (char *)flags[i];
    argv[n++] = url; /* last */
    argv[n] = NULL;
    pid_t pid = fh_proc_spawn(argv, out, err);
    if (pid < 0)
        return -1;
    double deadline = fh_now_seconds() + BROWSER_SECONDS;
    int status;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (got < 0 && errno != EINTR)
            return -1;
        if (fh_now_seconds() > deadline) {
            kill(pid, SIGKILL);
            fh_proc_wait(pid);
            return -2;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Loads the page and reads what its script recorded: rendered "n/expected", the errors,
 * the page's height; *chart_list the ids of charts not rendered. Returns chromium's status. */
static int render(const char *chromium, const char *dir, const char *page, const char *tag,
                  char *rendered, char *expected, char *errors, size_t errors_size,
                  int *height, char *failed_charts, size_t failed_size)
{
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/%s.dom.html", dir, tag);
    snprintf(err, sizeof err, "%s/%s.chromium.log", dir, tag);
    int rc = run_chromium(chromium, dir, page, "--dump-dom", NULL, out, err);
    char *dom = fh_read_text(out);
    const char *d = dom ? dom : "";
    fh_body_attr(d, "data-charts-rendered", rendered, 32);
    fh_body_attr(d, "data-charts-expected", expected, 32);
    fh_body_attr(d, "data-errors", errors, errors_size);
    char h[32];
    fh_body_attr(d, "data-height", h, sizeof h);
    *height = atoi(h);
    failed_charts[0] = '\0';
    for (const char *p = d; (p = strstr(p, "<div class=\"chart\" id=\"")); p++) {
        const char *id = p + strlen("<div class=\"chart\" id=\"");
        const char *close = strchr(id, '>');
        if (close && !memmem(id, (size_t)(close - id), "data-rendered=\"1\"", 17)) {
            size_t used = strlen(failed_charts);
            snprintf(failed_charts + used, failed_size - used, "%.*s ",
                     (int)(strchr(id, '"') - id), id);
        }
    }
    /* chromium's own log of the page's console: an uncaught exception shows there too */
    char *log = fh_read_text(err);
    if (log && strstr(log, "Uncaught")) {
        size_t used = strlen(errors);
        snprintf(errors + used, errors_size - used, " (chromium log: uncaught exception)");
    }
    free(log);
    free(dom);
    return rc;
}

/* The DOM chromium dumped: the new parts of the page there and drawn. */
static void check_parts(const char *dom_path)
{
    char *dom = fh_read_text(dom_path);
    const char *d = dom ? dom : "";
    static const char *const drawn[] = {"chart-price", "chart-volatility", "chart-equity"};
    for (size_t i = 0; i < sizeof drawn / sizeof drawn[0]; i++) {
        char want[96];
        snprintf(want, sizeof want, "id=\"%s\" data-rendered=\"1\"", drawn[i]);
        CHECK_MSG(strstr(d, want) != NULL, "%s: %s is not drawn", dom_path, drawn[i]);
    }
    CHECK_MSG(strstr(d, "id=\"fh-risk\"") && strstr(d, "data-drawdowns=\"greedy\"") &&
                  strstr(d, "id=\"fh-yearly\"") && strstr(d, "<table class=\"settings\">"),
              "%s: the risk table, the worst drawdowns, the yearly bars or the settings "
              "tables are missing", dom_path);
    /* dygraphs makes a roller input for every chart, shown only with showRoller */
    int rollers_shown = 0;
    for (const char *p = d; (p = strstr(p, "class=\"dygraph-roller\"")); p++) {
        const char *tag_end = strchr(p, '>');
        rollers_shown += tag_end && !memmem(p, (size_t)(tag_end - p), "display: none", 13);
    }
    CHECK_MSG(rollers_shown == 0, "%s: %d roller boxes sit inside charts", dom_path,
              rollers_shown);
    /* the equity chart's y axis: dygraphs writes one div per labelled tick */
    const char *equity = strstr(d, "id=\"chart-equity\"");
    const char *end = equity ? strstr(equity, "id=\"legend-equity\"") : NULL;
    int ticks = 0;
    for (const char *p = equity; p && end && (p = strstr(p, "dygraph-axis-label-y")) && p < end;
         p++)
        ticks++;
    CHECK_MSG(ticks >= 3, "%s: the equity axis has %d labelled ticks, expected 3 or more",
              dom_path, ticks);
    free(dom);
}

/* The page with the embedded dygraphs script emptied (the <script> after the licence
 * comment), written to out. */
static int without_dygraphs(const char *page, const char *out)
{
    char *html = fh_read_text(page);
    char *comment_end = html ? strstr(html, "-->\n<script>\n") : NULL;
    char *script = comment_end ? comment_end + strlen("-->\n<script>\n") : NULL;
    char *script_end = script ? strstr(script, "</script>") : NULL;
    int ok = 0;
    if (script_end) {
        memmove(script, script_end, strlen(script_end) + 1);
        ok = fh_write_text(out, html);
    }
    free(html);
    return ok;
}

static int copy_file(const char *from, const char *to)
{
    size_t n = 0;
    char *bytes = fh_test_read_file(from, &n);
    FILE *f = bytes ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(bytes, 1, n, f) == n;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(bytes);
    return ok;
}

int main(void)
{
    const char *chromium = find_chromium();
    if (!chromium)
        fh_test_skip("no headless chromium found (Debian: apt-get install "
                     "chromium-headless-shell, as scripts/setup.sh does; or set "
                     "FOXHUNT_CHROMIUM to a chromium binary)");
    printf("browser: %s\n", chromium);
    char dir[256], run_dir[400], ck[500], page[600], broken[600];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_report_browser"));
    CHECK_MSG(fh_report_train(dir, "3000", run_dir, sizeof run_dir) == 0, "the tiny run failed");
    snprintf(ck, sizeof ck, "%s/final.safetensors", run_dir);
    snprintf(page, sizeof page, "%s/report.html", dir);
    CHECK_MSG(fh_report_eval(dir, "eval", ck, page, NULL) == 0, "eval --report failed");

    char rendered[32], expected[32], errors[4096], failed[1024];
    int height = 0;
    int rc = render(chromium, dir, page, "page", rendered, expected, errors, sizeof errors,
                    &height, failed, sizeof failed);
    CHECK_MSG(rc == 0, "chromium exited %d (log: %s/page.chromium.log)", rc, dir);
    char want[64];
    snprintf(want, sizeof want, "%s/%s", expected, expected);
    CHECK_MSG(atoi(expected) >= 6 && strcmp(rendered, want) == 0,
              "charts rendered: '%s' of %s expected; not rendered: %s", rendered, expected,
              failed);
    CHECK_MSG(strcmp(errors, "[]") == 0, "the page reported errors: %s", errors);
    printf("charts rendered: %s, errors: %s, page height %d px\n", rendered, errors, height);
    char dom[700];
    snprintf(dom, sizeof dom, "%s/page.dom.html", dir);
    check_parts(dom);

    /* the check can fail: the page without dygraphs renders nothing and says why */
    snprintf(broken, sizeof broken, "%s/no-dygraphs.html", dir);
    CHECK_MSG(without_dygraphs(page, broken), "could not strip dygraphs from the page");
    int h2;
    char errors2[4096], rendered2[32], expected2[32], failed2[1024];
    render(chromium, dir, broken, "broken", rendered2, expected2, errors2, sizeof errors2, &h2,
           failed2, sizeof failed2);
    char none[64];
    snprintf(none, sizeof none, "0/%s", expected2);
    CHECK_MSG(strcmp(rendered2, none) == 0 && strstr(errors2, "Dygraph"),
              "without dygraphs the page should render no chart and report the missing "
              "Dygraph: rendered '%s', errors %s", rendered2, errors2);

    /* the screenshot, the page's whole height */
    char shot[700], size[64], flag[760], kept[700];
    snprintf(shot, sizeof shot, "%s/report_browser.png", FH_TEST_OUTPUT_DIR);
    remove(shot);
    snprintf(size, sizeof size, "--window-size=1400,%d",
             height < 600 ? 600 : height > 12000 ? 12000 : height);
    snprintf(flag, sizeof flag, "--screenshot=%s", shot);
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/shot.out", dir);
    snprintf(err, sizeof err, "%s/shot.log", dir);
    rc = run_chromium(chromium, dir, page, size, flag, out, err);
    size_t n = 0;
    char *png = fh_test_read_file(shot, &n);
    CHECK_MSG(rc == 0 && png && n > 20000 && memcmp(png, "\x89PNG", 4) == 0,
              "no screenshot at %s (chromium exited %d, %zu bytes)", shot, rc, n);
    free(png);
    snprintf(kept, sizeof kept, "%s/report_browser.html", FH_TEST_OUTPUT_DIR);
    CHECK(copy_file(page, kept));
    printf("screenshot: %s\n", shot);
    fh_test_tidy(dir);
    return fh_test_finish();
}

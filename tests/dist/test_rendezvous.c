/* test_rendezvous.c — dist/rendezvous.h on the CPU: rank 0 and rank 1 as two processes
 * (fork) meeting through a file in a temporary directory, the id arriving intact; files
 * that are short, of another format, version, world size or checksum refused at once
 * with a message naming the file; the waits' timeouts (naming the missing ranks); an
 * arrival of another run not counted; a stale id file refused; the abort file stopping
 * a wait at once, the first failure kept; a FIFO (or a directory) at the id path or at a
 * side file (abort, arrival, the writer's temporary file) refused or waited past within
 * the timeout, never blocked on (issue 32: an open of a FIFO with no writer used to hang
 * past --dist-timeout); an alarm fails the test should a call block. */
#include "test_proc.h" /* first: _GNU_SOURCE */

#include <signal.h>
#include <stdint.h>

#include "dist/rendezvous.h"
#include "foxhunt/hash.h"
#include "foxhunt/timing.h"
#include "test_util.h"

#define ID_BYTES 128

static void make_id(unsigned char *id, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1u;
    for (int i = 0; i < ID_BYTES; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        id[i] = (unsigned char)x;
    }
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n);
    if (f)
        fclose(f);
}

/* A file of these bytes at path is refused by the wait at once, the message holding
 * needle. */
static void check_refused_file(const char *path, const void *bytes, size_t n, int world,
                               const char *needle)
{
    unlink(path);
    write_bytes(path, bytes, n);
    unsigned char id[ID_BYTES];
    fh_error err;
    fh_error_clear(&err);
    double t0 = fh_clock_seconds();
    fh_status st = fh_rendezvous_wait(path, world, id, ID_BYTES, 5.0, &err);
    double waited = fh_clock_seconds() - t0;
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, needle) && strstr(err.message, path),
              "%s: status %d, message '%s' (expected '%s' naming the file)", needle, (int)st,
              err.message, needle);
    CHECK_MSG(waited < 1.0, "a bad file took %.2f s to refuse (no polling expected)", waited);
    unlink(path);
}

static void test_encode_decode(const char *dir)
{
    unsigned char id[ID_BYTES], back[ID_BYTES], buf[512];
    make_id(id, 7);
    size_t n = fh_rendezvous_encode(buf, sizeof buf, 4, id, ID_BYTES);
    CHECK_MSG(n == 24 + ID_BYTES + 8, "encoded %zu bytes", n);
    CHECK(memcmp(buf, "FHNCCLID", 8) == 0);
    fh_error err;
    CHECK(fh_rendezvous_decode(buf, n, 4, back, ID_BYTES, "x", &err) == FH_OK);
    CHECK(memcmp(id, back, ID_BYTES) == 0);
    CHECK(fh_rendezvous_encode(buf, 100, 4, id, ID_BYTES) == 0); /* too small */

    char path[600];
    snprintf(path, sizeof path, "%s/bad-id", dir);
    check_refused_file(path, buf, n - 1, 4, "bytes holding");       /* short by one */
    check_refused_file(path, buf, 10, 4, "not a foxhunt rendezvous");  /* truncated */
    check_refused_file(path, "hello world, not an id at all", 29, 4, "not a foxhunt");
    unsigned char bad[512];
    memcpy(bad, buf, n);
    bad[8] = 9; /* version */
    check_refused_file(path, bad, n, 4, "has version 9");
    memcpy(bad, buf, n);
    bad[24 + 17] ^= 1; /* one bit of the id */
    check_refused_file(path, bad, n, 4, "checksum");
    check_refused_file(path, buf, n, 2, "a run of 4 ranks");          /* world 2 reads 4 */
    /* the reserved field not 0 under a checksum that matches (fuzz_rendezvous found it
     * accepted: the file is refused unless it is exactly what encode writes) */
    memcpy(bad, buf, n);
    bad[20] = 1;
    uint64_t sum = fh_fnv1a(bad, n - 8, FH_FNV1A_OFFSET);
    memcpy(bad + n - 8, &sum, 8);
    check_refused_file(path, bad, n, 4, "reserved field");
}

static void test_two_processes(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/run1.id", dir);
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) { /* rank 1: waits for the file, then meets rank 0 */
        close(fds[0]);
        unsigned char id[ID_BYTES];
        fh_error err;
        if (fh_rendezvous_wait(path, 2, id, ID_BYTES, 20.0, &err) != FH_OK) {
            fprintf(stderr, "rank 1: %s\n", err.message);
            _exit(2);
        }
        uint64_t nonce = fh_rendezvous_nonce(id, ID_BYTES);
        if (fh_rendezvous_arrive(path, 1, nonce, &err) != FH_OK ||
            fh_rendezvous_barrier(path, 2, nonce, 20.0, &err) != FH_OK) {
            fprintf(stderr, "rank 1: %s\n", err.message);
            _exit(3);
        }
        _exit(write(fds[1], id, ID_BYTES) == ID_BYTES ? 0 : 4);
    }
    close(fds[1]);
    struct timespec pause = {0, 300000000}; /* rank 1 polls a missing file first */
    nanosleep(&pause, NULL);
    unsigned char id[ID_BYTES], got[ID_BYTES];
    make_id(id, 42);
    fh_error err;
    fh_error_clear(&err);
    uint64_t nonce = fh_rendezvous_nonce(id, ID_BYTES);
    CHECK_MSG(fh_rendezvous_publish(path, 2, id, ID_BYTES, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_rendezvous_arrive(path, 0, nonce, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_rendezvous_barrier(path, 2, nonce, 20.0, &err) == FH_OK, "%s", err.message);
    size_t n = 0;
    while (n < ID_BYTES) {
        ssize_t r = read(fds[0], got + n, ID_BYTES - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fds[0]);
    int rc = fh_proc_wait(pid);
    CHECK_MSG(rc == 0, "rank 1 exited %d", rc);
    CHECK_MSG(n == ID_BYTES && memcmp(id, got, ID_BYTES) == 0, "rank 1 read another id (%zu "
              "bytes)", n);
    /* a second publish onto the same path is refused: a stale id is never reused */
    fh_error_clear(&err);
    CHECK(fh_rendezvous_publish(path, 2, id, ID_BYTES, &err) == FH_ERR_INPUT &&
          strstr(err.message, "exists already"));
    fh_rendezvous_remove(path, 2);
    char side[700];
    snprintf(side, sizeof side, "%s.rank1", path);
    CHECK(!fh_file_exists(path) && !fh_file_exists(side));
    CHECK(fh_rendezvous_publish(path, 2, id, ID_BYTES, &err) == FH_OK); /* free again */
    fh_rendezvous_remove(path, 2);
}

static void test_timeouts(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/never.id", dir);
    unsigned char id[ID_BYTES];
    fh_error err;
    fh_error_clear(&err);
    double t0 = fh_clock_seconds();
    fh_status st = fh_rendezvous_wait(path, 2, id, ID_BYTES, 1.0, &err);
    double waited = fh_clock_seconds() - t0;
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, "within 1 s") &&
              strstr(err.message, path), "wait: status %d, '%s'", (int)st, err.message);
    CHECK_MSG(waited >= 1.0 && waited < 3.0, "the 1 s wait took %.2f s", waited);

    /* world 3, rank 0 alone and an arrival of another run's nonce: 1 and 2 are missing */
    make_id(id, 3);
    uint64_t nonce = fh_rendezvous_nonce(id, ID_BYTES);
    CHECK(fh_rendezvous_arrive(path, 0, nonce, &err) == FH_OK);
    CHECK(fh_rendezvous_arrive(path, 1, nonce ^ 1u, &err) == FH_OK);
    fh_error_clear(&err);
    st = fh_rendezvous_barrier(path, 3, nonce, 0.5, &err);
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, "2 of 3 ranks did not arrive") &&
              strstr(err.message, "missing: 1, 2"), "barrier: status %d, '%s'", (int)st,
              err.message);
    fh_rendezvous_remove(path, 3);
}

static void test_abort(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/aborted.id", dir);
    fh_error err;
    char msg[256];
    CHECK(!fh_rendezvous_abort_read(path, msg, sizeof msg));
    CHECK(fh_rendezvous_abort_write(path, "rank 1 failed: out of memory", &err) == FH_OK);
    CHECK(fh_rendezvous_abort_write(path, "rank 0 failed: later", &err) == FH_OK);
    CHECK(fh_rendezvous_abort_read(path, msg, sizeof msg) &&
          strcmp(msg, "rank 1 failed: out of memory") == 0); /* the first kept */
    unsigned char id[ID_BYTES];
    fh_error_clear(&err);
    double t0 = fh_clock_seconds();
    fh_status st = fh_rendezvous_wait(path, 2, id, ID_BYTES, 10.0, &err);
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, "out of memory") &&
              fh_clock_seconds() - t0 < 1.0, "wait with an abort file: '%s'", err.message);
    fh_error_clear(&err);
    st = fh_rendezvous_barrier(path, 2, 1234, 10.0, &err);
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, "out of memory") &&
              fh_clock_seconds() - t0 < 2.0, "barrier with an abort file: '%s'", err.message);
    /* rank 0's publish clears a stale abort (an earlier run's) */
    make_id(id, 5);
    CHECK(fh_rendezvous_publish(path, 2, id, ID_BYTES, &err) == FH_OK);
    CHECK(!fh_rendezvous_abort_read(path, msg, sizeof msg));
    fh_rendezvous_remove(path, 2);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: a rendezvous call blocked on a FIFO (alarm after 30 s)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

/* What no rank may block on: a FIFO (no writer, no reader) in the place of each file. */
static void test_not_regular(const char *dir)
{
    signal(SIGALRM, on_alarm);
    alarm(30);
    char path[600], side[700];
    unsigned char id[ID_BYTES];
    fh_error err;
    double t0;
    fh_status st;

    /* the id file: refused at once, naming it and what it is */
    snprintf(path, sizeof path, "%s/fifo.id", dir);
    CHECK(mkfifo(path, 0600) == 0);
    fh_error_clear(&err);
    t0 = fh_clock_seconds();
    st = fh_rendezvous_wait(path, 2, id, ID_BYTES, 5.0, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, path) &&
                  strstr(err.message, "FIFO") && strstr(err.message, "not a regular file") &&
                  fh_clock_seconds() - t0 < 1.0,
              "a FIFO as the id file: status %d, '%s' after %.2f s", (int)st, err.message,
              fh_clock_seconds() - t0);
    unlink(path);
    /* a directory too */
    CHECK(mkdir(path, 0700) == 0);
    fh_error_clear(&err);
    st = fh_rendezvous_wait(path, 2, id, ID_BYTES, 5.0, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, path) &&
                  strstr(err.message, "directory"), "a directory as the id file: '%s'",
              err.message);
    rmdir(path);

    /* the abort file, while the id file is still missing: the wait stops at once, saying
     * what is in its place; the watchdog's read sees it as a failure, not a hang */
    snprintf(side, sizeof side, "%s.abort", path);
    CHECK(mkfifo(side, 0600) == 0);
    fh_error_clear(&err);
    t0 = fh_clock_seconds();
    st = fh_rendezvous_wait(path, 2, id, ID_BYTES, 5.0, &err);
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, side) &&
                  strstr(err.message, "not a regular file") && fh_clock_seconds() - t0 < 1.0,
              "a FIFO as the abort file: status %d, '%s'", (int)st, err.message);
    char msg[256];
    CHECK_MSG(fh_rendezvous_abort_read(path, msg, sizeof msg) && strstr(msg, side),
              "abort_read of a FIFO: '%s'", msg);
    fh_error_clear(&err);
    st = fh_rendezvous_barrier(path, 1, 1, 5.0, &err);
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, side), "barrier: '%s'", err.message);
    /* rank 0's publish clears it like a stale abort */
    make_id(id, 9);
    CHECK_MSG(fh_rendezvous_publish(path, 2, id, ID_BYTES, &err) == FH_OK, "%s", err.message);
    CHECK(!fh_file_exists(side));

    /* an arrival: a FIFO is no arrival; the barrier waits its timeout and names the rank */
    uint64_t nonce = fh_rendezvous_nonce(id, ID_BYTES);
    CHECK(fh_rendezvous_arrive(path, 0, nonce, &err) == FH_OK);
    snprintf(side, sizeof side, "%s.rank1", path);
    CHECK(mkfifo(side, 0600) == 0);
    fh_error_clear(&err);
    t0 = fh_clock_seconds();
    st = fh_rendezvous_barrier(path, 2, nonce, 0.5, &err);
    double waited = fh_clock_seconds() - t0;
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, "missing: 1") &&
                  strstr(err.message, "not a regular file") && waited < 2.5,
              "a FIFO as rank 1's arrival: status %d, '%s' after %.2f s", (int)st, err.message,
              waited);
    /* rank 1's arrival replaces it, and the barrier passes */
    CHECK(fh_rendezvous_arrive(path, 1, nonce, &err) == FH_OK);
    fh_error_clear(&err);
    CHECK_MSG(fh_rendezvous_barrier(path, 2, nonce, 2.0, &err) == FH_OK, "%s", err.message);

    /* a FIFO at the name of the writer's temporary file does not block the write */
    char tmp[760];
    snprintf(tmp, sizeof tmp, "%s.rank0.tmp%ld", path, (long)getpid());
    CHECK(mkfifo(tmp, 0600) == 0);
    fh_error_clear(&err);
    CHECK_MSG(fh_rendezvous_arrive(path, 0, nonce, &err) == FH_OK, "%s", err.message);
    CHECK(!fh_file_exists(tmp));
    fh_rendezvous_remove(path, 2);
    alarm(0);
}

int main(void)
{
    char dir[512];
    if (!fh_make_temp_dir(dir, sizeof dir, "test_rendezvous"))
        fh_test_skip("cannot make a temporary directory");
    test_encode_decode(dir);
    test_two_processes(dir);
    test_timeouts(dir);
    test_abort(dir);
    test_not_regular(dir);
    fh_test_tidy(dir);
    return fh_test_finish();
}

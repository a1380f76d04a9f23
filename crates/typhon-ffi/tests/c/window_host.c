/* A C host of window mode, built by tests/ffi_c.rs against include/typhon_recorder.h and the
 * static library. It checks that the size-prefixed TyphonConfigEx refuses bad sizes, that a
 * caller of an older, smaller TyphonConfigEx records a plain file (the fields past its size
 * are never read: they hold garbage, pointers among them, here), then records windowed as a
 * caller of a newer, larger struct whose extra fields are 0: a span trigger fires, then
 * typhon_snapshot, a snapshot into a too-small path buffer, and typhon_request_snapshot each
 * write a file. It prints "SNAPSHOT path=... records=... from=... to=..." for the explicit
 * snapshot and "FAILURES n"; the Rust test reads every file.
 *
 * Usage: window_host <snapshot dir> <older caller's output.dat> */
#define _GNU_SOURCE
#include "typhon_recorder.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EVENTS 2000

static int failures = 0;

#define CHECK(expr, want)                                                                       \
    do {                                                                                        \
        int32_t got_ = (expr);                                                                  \
        if (got_ != (want)) {                                                                   \
            fprintf(stderr, "%s:%d: %s = %s, want %s (%s)\n", __FILE__, __LINE__, #expr,        \
                    typhon_error_name(got_), typhon_error_name(want),                           \
                    typhon_last_error_message());                                               \
            failures++;                                                                         \
        }                                                                                       \
    } while (0)

#define EXPECT(cond)                                                                            \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                 \
            failures++;                                                                         \
        }                                                                                       \
    } while (0)

/* The calling thread's last error message must name the function and contain `want`. */
#define CHECK_MESSAGE(func, want)                                                               \
    do {                                                                                        \
        const char *m_ = typhon_last_error_message();                                           \
        if (strncmp(m_, func ": ", strlen(func ": ")) != 0 || strstr(m_, (want)) == NULL) {     \
            fprintf(stderr, "%s:%d: last error message \"%s\", want %s: ...%s...\n", __FILE__,   \
                    __LINE__, m_, func, (want));                                                \
            failures++;                                                                         \
        }                                                                                       \
    } while (0)

/* Complete snapshot files in `dir` (a snapshot in progress is a hidden .tmp). */
static int count_snapshots(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != '.' && len > 4 && strcmp(e->d_name + len - 4, ".dat") == 0) n++;
    }
    closedir(d);
    return n;
}

/* Waits (up to 30 s) until `dir` holds `n` snapshots; returns whether it did. */
static int wait_for(const char *dir, int n) {
    for (int i = 0; i < 3000; i++) {
        if (count_snapshots(dir) >= n) return 1;
        usleep(10000);
    }
    return 0;
}

/* A caller built against a newer header: its struct has two more fields. */
struct newer_config {
    TyphonConfigEx c;
    uint64_t newer[2];
};

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <snapshot dir> <older.dat>\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *older = argv[2];
    char path[4096];
    TyphonSnapshot info = {.size = sizeof info};
    CHECK(typhon_snapshot(path, sizeof path, &info), TYPHON_ERR_NOT_STARTED);
    CHECK(typhon_request_snapshot("too early"), TYPHON_ERR_NOT_STARTED);
    CHECK(typhon_set_thread_info("c-main", 6, TYPHON_THREAD_MAIN), TYPHON_OK);

    /* Sizes the library refuses, each with a message that says why. */
    const uint64_t minute = 60ull * 1000 * 1000 * 1000;
    TyphonConfigEx c = {.size = 0, .window_ns = minute, .snapshot_dir = dir};
    CHECK(typhon_start_ex(NULL), TYPHON_ERR_NULL);
    CHECK(typhon_start_ex(&c), TYPHON_ERR_STRUCT_SIZE);
    CHECK_MESSAGE("typhon_start_ex", "smaller than the first version");
    c.size = TYPHON_CONFIG_EX_MIN_SIZE - 8;
    CHECK(typhon_start_ex(&c), TYPHON_ERR_STRUCT_SIZE);
    c.size = TYPHON_CONFIG_EX_MIN_SIZE + 4;
    CHECK(typhon_start_ex(&c), TYPHON_ERR_STRUCT_SIZE);
    CHECK_MESSAGE("typhon_start_ex", "inside a field");
    c.size = 1 << 20;
    CHECK(typhon_start_ex(&c), TYPHON_ERR_STRUCT_SIZE);
    CHECK_MESSAGE("typhon_start_ex", "4096");
    struct newer_config big = {.c = c, .newer = {0, 7}};
    big.c.size = sizeof big;
    CHECK(typhon_start_ex(&big.c), TYPHON_ERR_STRUCT_SIZE);
    CHECK_MESSAGE("typhon_start_ex", "not 0");
    /* Sizes that are fine but settings that are not. */
    c.size = sizeof c;
    c.output_path = older;
    CHECK(typhon_start_ex(&c), TYPHON_ERR_CONFIG); /* a window keeps no output */
    CHECK_MESSAGE("typhon_start_ex", "set no output");
    c.output_path = NULL;
    c.trigger_keep_after_ns = 1000;
    CHECK(typhon_start_ex(&c), TYPHON_ERR_CONFIG);
    CHECK_MESSAGE("typhon_start_ex", "without a trigger");
    c.trigger_keep_after_ns = 0;
    c.reserved = 1;
    CHECK(typhon_start_ex(&c), TYPHON_ERR_CONFIG);
    c.reserved = 0;

    /* An older caller: its struct ends after max_page_age_us. Past its size this one holds
     * garbage a read would act on (a window, a bad pointer as the snapshot directory), so the
     * file recording it gets shows that nothing past the size was read. */
    TyphonConfigEx old = {
        .size = offsetof(TyphonConfigEx, window_ns),
        .output_path = older,
        .ring_bytes = 1 << 20,
        .flush_interval_us = 1000,
        .max_page_age_us = 1000,
        .window_ns = 12345,
        .window_bytes = 1,
        .snapshot_dir = (const char *)(uintptr_t)8,
        .rotate_keep = 99,
        .span_over_name = (const char *)(uintptr_t)8,
    };
    CHECK(typhon_start_ex(&old), TYPHON_OK);
    for (int i = 0; i < 100; i++) CHECK(typhon_instant(8, i), TYPHON_OK);
    CHECK(typhon_snapshot(path, sizeof path, &info), TYPHON_ERR_NOT_WINDOWED);
    CHECK(typhon_request_snapshot(NULL), TYPHON_ERR_NOT_WINDOWED);
    CHECK(typhon_finish(NULL), TYPHON_OK);

    /* Windowed, from a newer caller whose extra fields are 0: a minute's window (it holds
     * everything written here), a trigger on the span "stall" over 1 ms, at most one an hour. */
    big.c = (TyphonConfigEx){
        .ring_bytes = 1 << 20,
        .flush_interval_us = 1000,
        .window_ns = minute,
        .snapshot_dir = dir,
        .span_over_name = "stall",
        .span_over_ns = 1000 * 1000,
        .trigger_at_most_every_ns = 60 * minute,
    };
    big.newer[1] = 0;
    big.c.size = sizeof big;
    CHECK(typhon_start_ex(&big.c), TYPHON_OK);
    for (int i = 0; i < EVENTS; i++) CHECK(typhon_instant(7, i), TYPHON_OK);
    uint64_t t = typhon_now();
    CHECK(typhon_counter_at(t, "c-queue", 7, 42), TYPHON_OK);
    CHECK(typhon_counter_f64_at(t, "c-load", 6, 0.25), TYPHON_OK);

    uint64_t id = 0;
    CHECK(typhon_span_begin("stall", 5, &id), TYPHON_OK);
    usleep(3000);
    CHECK(typhon_span_end(id), TYPHON_OK);
    if (!wait_for(dir, 1)) {
        fprintf(stderr, "the span trigger wrote no snapshot\n");
        failures++;
    }

    CHECK(typhon_snapshot(path, sizeof path, &info), TYPHON_OK);
    EXPECT(strlen(path) == info.path_len && info.from_ns < info.to_ns && info.records > EVENTS);
    printf("SNAPSHOT path=%s records=%llu from=%llu to=%llu open=%llu\n", path,
           (unsigned long long)info.records, (unsigned long long)info.from_ns,
           (unsigned long long)info.to_ns, (unsigned long long)info.open_spans);

    /* An older TyphonSnapshot (from_ns and to_ns only): nothing past its size is written. The
     * path does not fit: the snapshot is written even so, the message has its path. */
    TyphonSnapshot small_info;
    memset(&small_info, 0xAB, sizeof small_info);
    small_info.size = TYPHON_SNAPSHOT_MIN_SIZE;
    char small[8];
    CHECK(typhon_snapshot(small, sizeof small, &small_info), TYPHON_ERR_BUFFER);
    CHECK_MESSAGE("typhon_snapshot", ".dat");
    EXPECT(small[0] == 0 && small_info.to_ns >= info.to_ns);
    EXPECT(small_info.records == 0xABABABABABABABABull && small_info.path_len == small_info.records);
    small_info.size = TYPHON_SNAPSHOT_MIN_SIZE + 4;
    CHECK(typhon_snapshot(NULL, 0, &small_info), TYPHON_ERR_STRUCT_SIZE);
    CHECK(typhon_snapshot(NULL, 16, NULL), TYPHON_ERR_NULL);

    int before = count_snapshots(dir);
    CHECK(typhon_request_snapshot("c-request"), TYPHON_OK);
    if (!wait_for(dir, before + 1)) {
        fprintf(stderr, "typhon_request_snapshot wrote no snapshot\n");
        failures++;
    }
    uint64_t evicted = 1;
    CHECK(typhon_evicted_records(&evicted), TYPHON_OK);
    EXPECT(evicted == 0);
    TyphonStats st;
    CHECK(typhon_finish(&st), TYPHON_OK);
    CHECK(typhon_snapshot(path, sizeof path, &info), TYPHON_ERR_NOT_STARTED);
    printf("SNAPSHOTS %d\n", count_snapshots(dir));
    printf("FAILURES %d\n", failures);
    return failures != 0;
}

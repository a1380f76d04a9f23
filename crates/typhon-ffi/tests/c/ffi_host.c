/* A C host of the recorder, built by tests/ffi_c.rs against include/typhon_recorder.h and the
 * static library. It records from ROUNDS x THREADS pthreads (each round's threads exit before
 * the next round starts, so their slots must be retired by the recorder's thread-local
 * destructors and reused), checks the ABI's error paths, and prints the final stats as
 * "STATS key=value ..." for the Rust test, which checks the trace.dat with the crate's reader.
 *
 * Usage: ffi_host <output.dat> */
#define _GNU_SOURCE
#include "typhon_recorder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 3
#define THREADS 4
#define EVENTS 500

static int failures = 0;

#define CHECK(expr, want)                                                                       \
    do {                                                                                        \
        int32_t got_ = (expr);                                                                  \
        if (got_ != (want)) {                                                                   \
            fprintf(stderr, "%s:%d: %s = %s, want %s\n", __FILE__, __LINE__, #expr,             \
                    typhon_error_name(got_), typhon_error_name(want));                          \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                                 \
        }                                                                                       \
    } while (0)

/* The calling thread's last error message must name the function and contain `want`. */
#define CHECK_MESSAGE(func, want)                                                               \
    do {                                                                                        \
        const char *m_ = typhon_last_error_message();                                           \
        if (m_ == NULL || strncmp(m_, func ": ", strlen(func ": ")) != 0 ||                     \
            strstr(m_, (want)) == NULL) {                                                       \
            fprintf(stderr, "%s:%d: last error message \"%s\", want %s: ...%s...\n", __FILE__,   \
                    __LINE__, m_ ? m_ : "(null)", func, (want));                                \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                                 \
        }                                                                                       \
    } while (0)

struct worker {
    pthread_t th;
    int id; /* global thread number: round * THREADS + index */
};

static void *run_worker(void *arg) {
    struct worker *w = arg;
    char name[32];
    int n = snprintf(name, sizeof name, "c-worker-%d", w->id);
    CHECK(typhon_set_thread_info(name, (size_t)n, TYPHON_THREAD_WORKER), TYPHON_OK);
    /* Odd workers claim their slot up front; even ones on their first event. */
    if (w->id % 2) CHECK(typhon_register_thread(), TYPHON_OK);

    for (int i = 0; i < EVENTS; i++) {
        uint64_t outer = 0, inner = 0;
        CHECK(typhon_span_begin("frame", 5, &outer), TYPHON_OK);
        /* One Instant per iteration: (thread id, i) — the test checks every one arrived. */
        CHECK(typhon_instant(w->id, i), TYPHON_OK);
        CHECK(typhon_ingress_received((uint32_t)w->id, (uint16_t)i, 0, 64), TYPHON_OK);
        uint64_t hi = 0, lo = 0;
        CHECK(typhon_command_causal_id((uint32_t)w->id, (uint32_t)i, (uint16_t)i, &hi, &lo),
              TYPHON_OK);
        CHECK(typhon_traced_span_begin("apply", 5, hi, lo, &inner), TYPHON_OK);
        /* Ending the outer span first is refused and changes nothing. */
        CHECK(typhon_span_end(outer), TYPHON_ERR_SPAN_MISMATCH);
        CHECK(typhon_span_end(inner), TYPHON_OK);
        uint32_t payload = (uint32_t)i;
        CHECK(typhon_celog_data(1, 0x2000, &payload, sizeof payload, 0, 1, 0, 0), TYPHON_OK);
        uint8_t custom[3] = {(uint8_t)w->id, (uint8_t)i, (uint8_t)(i >> 8)};
        CHECK(typhon_write_record_at(typhon_now(), 200, custom, sizeof custom), TYPHON_OK);
        CHECK(typhon_egress_sent_at(typhon_now(), (uint32_t)w->id, (uint32_t)i, 128, 1),
              TYPHON_OK);
        CHECK(typhon_span_end(outer), TYPHON_OK);
    }
    /* Bad input is an error code with a message, never a crash; each refused write is counted
     * (REFUSED_PER_WORKER of them). */
    uint64_t id = 7;
    CHECK(typhon_span_begin(NULL, 3, &id), TYPHON_ERR_NULL);
    CHECK_MESSAGE("typhon_span_begin", "NULL");
    CHECK(typhon_span_begin("x", 1, NULL), TYPHON_ERR_NULL);
    CHECK(typhon_span_begin("\xff\xfe", 2, &id), TYPHON_ERR_UTF8);
    CHECK_MESSAGE("typhon_span_begin", "UTF-8");
    CHECK(typhon_write_record(TYPHON_THREAD_MAIN /* TickStart */, (const uint8_t *)"x", 1),
          TYPHON_ERR_INVALID);
    CHECK_MESSAGE("typhon_write_record", "TickStart");
    static uint8_t big[8192];
    CHECK(typhon_write_record(200, big, sizeof big), TYPHON_ERR_TOO_LARGE);
    CHECK_MESSAGE("typhon_write_record", "8204 bytes");
    CHECK(typhon_celog_data(1, 0x2000, NULL, 4, 0, 1, 0, 0), TYPHON_ERR_NULL);
    /* A span whose record does not fit in a page is refused when it begins, not dropped
     * silently when it ends. */
    static char long_name[5000];
    memset(long_name, 'n', sizeof long_name);
    CHECK(typhon_span_begin(long_name, sizeof long_name, &id), TYPHON_ERR_TOO_LARGE);
    CHECK_MESSAGE("typhon_span_begin", "5038 bytes");
    if (id != 0) failures++;
    /* A success leaves the message in place. */
    CHECK(typhon_tick_start(), TYPHON_OK);
    CHECK_MESSAGE("typhon_span_begin", "5038 bytes");
    return NULL;
    /* Thread exit: glibc runs the recorder's thread-local destructors, which retire the slot. */
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <output.dat>\n", argv[0]);
        return 2;
    }
    printf("VERSION %s\n", typhon_version());
    CHECK(typhon_start(NULL), TYPHON_ERR_NULL);
    TyphonStats st;
    CHECK(typhon_stats(&st), TYPHON_ERR_NOT_STARTED);
    uint64_t gap = 0;
    CHECK(typhon_longest_drain_gap(&gap), TYPHON_ERR_NOT_STARTED);
    CHECK(typhon_drain(), TYPHON_ERR_NOT_STARTED);
    CHECK(typhon_register_thread(), TYPHON_ERR_NOT_STARTED);
    if (strcmp(typhon_error_name(TYPHON_ERR_NO_SLOT), "TYPHON_ERR_NO_SLOT") != 0) failures++;
    if (strcmp(typhon_error_name(-12345), "TYPHON_ERR_UNKNOWN") != 0) failures++;

    TyphonConfig cfg = {.output_path = argv[1], .page_size = 0, .ring_bytes = 1 << 20,
                        .flush_interval_us = 1000};
    TyphonConfig bad = cfg;
    bad.page_size = 5000;
    CHECK(typhon_start(&bad), TYPHON_ERR_CONFIG);
    CHECK_MESSAGE("typhon_start", "5000"); /* the configuration's own text */
    CHECK(typhon_start(&cfg), TYPHON_OK);
    CHECK(typhon_start(&cfg), TYPHON_ERR_ALREADY_STARTED);
    CHECK_MESSAGE("typhon_start", "already running");

    CHECK(typhon_set_thread_info("c-main", 6, TYPHON_THREAD_MAIN), TYPHON_OK);
    CHECK(typhon_tick_start(), TYPHON_OK);
    /* One time an hour ahead: clamped (counted), so it does not pin c-main's later records. */
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t now_ns = (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec;
    CHECK(typhon_instant_at(typhon_ns_to_ticks(now_ns + 3600000000000ull), -1, -1), TYPHON_OK);
    CHECK(typhon_phase_start(1), TYPHON_OK);
    CHECK(typhon_named_instant("c-named", 7, 3), TYPHON_OK);
    CHECK(typhon_counter("c-depth", 7, -4), TYPHON_OK);
    CHECK(typhon_counter_f64("c-load", 6, 1.5), TYPHON_OK);
    CHECK(typhon_named_phase_start(2, "io", 2), TYPHON_OK);
    CHECK(typhon_named_phase_end_at(typhon_now(), 2, "io", 2), TYPHON_OK);

    struct worker ws[ROUNDS * THREADS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int t = 0; t < THREADS; t++) {
            struct worker *w = &ws[r * THREADS + t];
            w->id = r * THREADS + t;
            if (pthread_create(&w->th, NULL, run_worker, w) != 0) {
                perror("pthread_create");
                return 2;
            }
        }
        for (int t = 0; t < THREADS; t++) pthread_join(ws[r * THREADS + t].th, NULL);
        /* The flusher drains the retired rings and frees their slots. */
        CHECK(typhon_drain(), TYPHON_OK);
    }

    CHECK(typhon_stats(&st), TYPHON_OK);
    /* Every record of the joined workers is counted by now. */
    if (st.written < (unsigned long long)ROUNDS * THREADS * EVENTS) failures++;
    /* One drain per round: at least two cycles, so some time passed between two of them. */
    CHECK(typhon_longest_drain_gap(NULL), TYPHON_ERR_NULL);
    CHECK(typhon_longest_drain_gap(&gap), TYPHON_OK);
    if (gap == 0) failures++;
    /* A file recording keeps no window: nothing is evicted. */
    uint64_t evicted = 1;
    CHECK(typhon_evicted_records(NULL), TYPHON_ERR_NULL);
    CHECK(typhon_evicted_records(&evicted), TYPHON_OK);
    if (evicted != 0) failures++;
    evicted = 1;
    CHECK(typhon_evicted_pages(&evicted), TYPHON_OK);
    if (evicted != 0) failures++;
    CHECK(typhon_phase_end(1), TYPHON_OK);
    CHECK(typhon_tick_end(0, 1), TYPHON_OK);
    CHECK(typhon_finish(&st), TYPHON_OK);
    CHECK(typhon_finish(&st), TYPHON_ERR_NOT_STARTED);
    CHECK_MESSAGE("typhon_finish", "no recorder is running");
    uint64_t clamped = 0;
    CHECK(typhon_clamped(&clamped), TYPHON_OK); /* the final count of the finished recorder */
    /* After finish, writes are no-ops. */
    CHECK(typhon_tick_start(), TYPHON_OK);

    printf("STATS attempted=%llu written=%llu missed=%llu filtered=%llu refused=%llu "
           "no_slot=%llu pages=%llu bytes=%llu sink_errors=%llu sink_lost=%llu slots=%llu "
           "clamped=%llu\n",
           (unsigned long long)st.attempted, (unsigned long long)st.written,
           (unsigned long long)st.missed, (unsigned long long)st.filtered,
           (unsigned long long)st.refused, (unsigned long long)st.no_slot,
           (unsigned long long)st.pages, (unsigned long long)st.bytes,
           (unsigned long long)st.sink_errors, (unsigned long long)st.sink_lost,
           (unsigned long long)st.slots, (unsigned long long)clamped);
    if (st.attempted != st.written + st.missed + st.sink_lost) {
        fprintf(stderr, "stats equation broken\n");
        failures++;
    }
    printf("FAILURES %d\n", failures);
    return failures == 0 ? 0 : 1;
}

/* A C host that asks the recorder to finish on termination (typhon_finish_on_termination),
 * built by tests/ffi_termination.rs. WRITERS pthreads write numbered instants (name id = the
 * thread, payload = its sequence number) without end, waiting for a drain every 1024 so that
 * no ring overflows; once each is past 20000 the main thread prints "WRITTEN n0 n1 n2", each
 * writer's count at that point. Then, by argv[2]: "exit" calls exit(3); "signal" waits to be
 * killed by the signal the test sends.
 *
 * Usage: term_host <output.dat> exit|signal */
#define _GNU_SOURCE
#include "typhon_recorder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WRITERS 3

static uint64_t progress[WRITERS];

static void *writer(void *arg) {
    int id = (int)(intptr_t)arg;
    for (uint32_t seq = 0;; seq++) {
        typhon_instant(id, (int32_t)seq);
        /* Release: the main thread's acquire load sees this write complete. */
        __atomic_store_n(&progress[id], (uint64_t)seq + 1, __ATOMIC_RELEASE);
        if (seq % 1024 == 1023) typhon_drain();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: term_host <output.dat> exit|signal\n");
        return 2;
    }
    TyphonConfig cfg = {.output_path = argv[1]};
    if (typhon_start(&cfg) != TYPHON_OK || typhon_finish_on_termination() != TYPHON_OK) {
        fprintf(stderr, "start: %s\n", typhon_last_error_message());
        return 2;
    }
    pthread_t th[WRITERS];
    for (int i = 0; i < WRITERS; i++) pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i);
    for (int k = 0; k < 100; k++) typhon_instant(99, k);
    for (;;) {
        int ready = 1;
        for (int i = 0; i < WRITERS; i++)
            if (__atomic_load_n(&progress[i], __ATOMIC_ACQUIRE) < 20000) ready = 0;
        if (ready) break;
        usleep(1000);
    }
    printf("WRITTEN");
    for (int i = 0; i < WRITERS; i++)
        printf(" %llu", (unsigned long long)__atomic_load_n(&progress[i], __ATOMIC_ACQUIRE));
    printf("\n");
    fflush(stdout);
    if (strcmp(argv[2], "exit") == 0) exit(3);
    for (;;) pause();
}

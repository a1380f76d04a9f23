/*
 * Interop reference for tests/kbuffer_interop.rs: reads a file of back-to-back sub-buffer pages
 * with libtraceevent's kbuffer and prints everything the API reports about each page, in the
 * format of dump_page() in tests/common/mod.rs.
 *
 * usage: kbuffer_pages <page_size> <4|8> <l|b> <file>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <kbuffer.h>

static unsigned int fnv(const unsigned char *p, int n)
{
	unsigned int h = 0x811c9dc5u;
	for (int i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x01000193u;
	}
	return h;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s page_size 4|8 l|b file\n", argv[0]);
		return 2;
	}
	long page_size = atol(argv[1]);
	int start = argv[2][0] == '8' ? 16 : 12;
	struct kbuffer *kb = kbuffer_alloc(argv[2][0] == '8' ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
					   argv[3][0] == 'b' ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
	FILE *f = fopen(argv[4], "rb");
	if (!kb || !f || page_size <= 0) {
		perror("setup");
		return 2;
	}
	unsigned char *page = malloc(page_size);
	for (int n = 0; fread(page, 1, page_size, f) == (size_t)page_size; n++) {
		unsigned long long ts = 0;
		void *ev;

		kbuffer_load_subbuffer(kb, page);
		printf("page %d subbuffer_size=%d start_of_data=%d timestamp=%llu missed=%d\n", n,
		       kbuffer_subbuffer_size(kb), kbuffer_start_of_data(kb), kbuffer_timestamp(kb),
		       kbuffer_missed_events(kb));
		while ((ev = kbuffer_read_event(kb, &ts))) {
			int size = kbuffer_event_size(kb);
			printf(" ev ts=%llu data_off=%ld event_size=%d curr_size=%d curr_offset=%d"
			       " curr_index=%d missed=%d fnv=%08x\n",
			       ts, (long)((unsigned char *)ev - page), size, kbuffer_curr_size(kb),
			       kbuffer_curr_offset(kb), kbuffer_curr_index(kb), kbuffer_missed_events(kb),
			       size > 0 ? fnv(ev, size) : 0);
			kbuffer_next_event(kb, NULL);
		}
		printf(" end curr_offset=%d curr_index=%d event_size=%d curr_size=%d timestamp=%llu\n",
		       kbuffer_curr_offset(kb), kbuffer_curr_index(kb), kbuffer_event_size(kb),
		       kbuffer_curr_size(kb), kbuffer_timestamp(kb));
		/* same probe offsets as probe_offsets() in tests/common/mod.rs */
		int size = kbuffer_subbuffer_size(kb);
		for (int o = -1; o <= start + size + 8; o = (o < 0 ? 0 : o + 13)) {
			ev = kbuffer_read_at_offset(kb, o, &ts);
			if (ev)
				printf(" rao %d ts=%llu curr_offset=%d missed=%d\n", o, ts,
				       kbuffer_curr_offset(kb), kbuffer_missed_events(kb));
			else
				printf(" rao %d nil\n", o);
		}
	}
	free(page);
	fclose(f);
	kbuffer_free(kb);
	return 0;
}

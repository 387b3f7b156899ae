/*
 * example.c - a tour of the kvhash C API: hash a prompt, feed an index the
 * KV events of two workers, and ask which worker holds most of the prompt.
 *
 *   cc example.c $(pkg-config --cflags --libs kvhash) -o example
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kvhash.h>

/* Prints the last error of this thread and exits. */
static void die(const char *what, int32_t status) {
	char msg[512];
	kvhash_last_error(msg, sizeof msg);
	fprintf(stderr, "%s: status %d: %s\n", what, (int)status, msg);
	exit(1);
}

int main(void) {
	printf("kvhash %s, spec %s\n", kvhash_version(), kvhash_spec_version());

	/* 1. Hash a prompt of 40 tokens in blocks of 16: two full blocks. */
	uint32_t tokens[40];
	for (int i = 0; i < 40; i++)
		tokens[i] = (uint32_t)(1000 + i);
	size_t n = 0;
	/* Ask for the size first (out = NULL, out_cap = 0), then hash. */
	int32_t st = kvhash_block_hashes(tokens, 40, 16, NULL, 0, NULL, 0, 0, NULL, NULL, 0, NULL, 0, &n);
	if (st != KVHASH_OK && st != KVHASH_ERR_BUFFER_TOO_SMALL)
		die("size query", st);
	uint64_t *local = malloc(n * sizeof *local);
	if ((st = kvhash_block_hashes(tokens, 40, 16, NULL, 0, NULL, 0, 0, NULL, NULL, 0, local, n, &n)))
		die("kvhash_block_hashes", st);
	for (size_t i = 0; i < n; i++)
		printf("block %zu: local hash %" PRIu64 "\n", i, local[i]);

	/* 2. An index, fed as engines report: worker 7 stored both blocks
	 *    (engine hashes 70 and 71), worker 8 only the first (engine hash 80). */
	uint64_t index;
	if ((st = kvhash_index_new(KVHASH_MODE_WARN, &index)))
		die("kvhash_index_new", st);
	const uint64_t engine7[2] = {70, 71};
	if ((st = kvhash_index_apply_stored(index, 7, 0, 1, 0, 0, engine7, local, 2)))
		die("apply stored", st);
	char event[256];
	snprintf(event, sizeof event,
	         "{\"event_id\":1,\"data\":{\"stored\":{\"parent_hash\":null,"
	         "\"blocks\":[{\"block_hash\":80,\"tokens_hash\":%" PRIu64 "}]}}}",
	         local[0]);
	if ((st = kvhash_index_apply_json(index, 8, event, strlen(event))))
		die("apply JSON", st);

	/* 3. Which workers hold a prefix of the prompt? */
	uint64_t ids[4], sizes[4];
	uint32_t ranks[4], scores[4];
	size_t m;
	if ((st = kvhash_index_find_matches(index, local, n, 0, ids, ranks, scores, sizes, 4, &m)))
		die("find matches", st);
	for (size_t i = 0; i < m; i++)
		printf("worker %" PRIu64 " rank %u: %u of %zu blocks cached\n", ids[i], ranks[i], scores[i], n);

	/* 4. A malformed event is an error status with a message, not a crash. */
	st = kvhash_index_apply_json(index, 8, "{\"event_id\":", 12);
	char msg[256];
	kvhash_last_error(msg, sizeof msg);
	printf("bad event -> status %d: %s\n", (int)st, msg);

	kvhash_index_free(index);
	free(local);
	return 0;
}

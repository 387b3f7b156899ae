/*
 * kvhash_test.c - the C API's test program (run by `make c-test`).
 *
 *   kvhash_test VECTORS.txt
 *
 * VECTORS.txt is the conformance vectors flattened by flatten_vectors.py
 * (one case a line; see its docstring). The program checks every vector,
 * the index API, bad input (answered with errors, never crashes) and
 * concurrent use from several threads, then prints "N passed, M failed"
 * and exits non-zero if anything failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvhash.h"

/* ---- Checks ------------------------------------------------------------- */

static int passed, failed; /* main thread only */

static void check_at(int ok, int line, const char *expr, const char *fmt, ...) {
	if (ok) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "FAIL (line %d) %s: ", line, expr);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define CHECK(cond, ...) check_at((cond) != 0, __LINE__, #cond, __VA_ARGS__)

/* The calling thread's last error, for messages. */
static const char *last_error(void) {
	static _Thread_local char buf[1024];
	kvhash_last_error(buf, sizeof buf);
	return buf;
}

/* Checks that a call returned the status wanted. */
#define CHECK_ST(call, want, ctx)                                                        \
	do {                                                                             \
		int32_t st_ = (call);                                                    \
		CHECK(st_ == (want), "%s: %s returned %d, want %d (last error: %s)", (ctx), \
		      #call, (int)st_, (int)(want), st_ ? last_error() : "-");             \
	} while (0)

static void *xmalloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (p == NULL) {
		perror("malloc");
		exit(2);
	}
	return p;
}

/* ---- The published reference vector ------------------------------------ */

static const uint32_t public_tokens[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const uint64_t public_local[3] = {14643705804678351452ULL, 16777012769546811212ULL,
                                         483935686894639516ULL};
static const uint64_t public_seq[3] = {14643705804678351452ULL, 4945711292740353085ULL,
                                       12583592247330656132ULL};
#define SENTINEL 0xDEADBEEFDEADBEEFULL

/* ---- Reading the flattened vectors ------------------------------------- */

#define WORD_MAX 65536

typedef struct {
	FILE *f;
	char word[WORD_MAX];
} reader;

static void bad_file(const char *what, const char *word) {
	fprintf(stderr, "vectors file: %s: \"%.80s\"\n", what, word);
	exit(2);
}

static const char *next_word(reader *r) {
	if (fscanf(r->f, "%65535s", r->word) != 1)
		bad_file("unexpected end of file", "");
	if (strlen(r->word) == WORD_MAX - 1)
		bad_file("word too long", r->word);
	return r->word;
}

static uint64_t parse_u64(const char *s) {
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *s == '\0' || *s == '-' || *end != '\0')
		bad_file("not a u64", s);
	return (uint64_t)v;
}

static int64_t parse_i64(const char *s) {
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || *s == '\0' || *end != '\0')
		bad_file("not an i64", s);
	return (int64_t)v;
}

static size_t read_count(reader *r) { return (size_t)parse_u64(next_word(r)); }

static uint64_t *read_u64s(reader *r, size_t *n) {
	*n = read_count(r);
	uint64_t *v = xmalloc(*n * sizeof *v);
	for (size_t i = 0; i < *n; i++)
		v[i] = parse_u64(next_word(r));
	return v;
}

/* Hex to bytes; "-" is none, "~" the empty string (a non-NULL pointer). */
static char *read_bytes(reader *r, size_t *n, int *is_null) {
	const char *w = next_word(r);
	*is_null = strcmp(w, "-") == 0;
	if (*is_null || strcmp(w, "~") == 0) {
		*n = 0;
		return *is_null ? NULL : xmalloc(1);
	}
	size_t len = strlen(w);
	if (len % 2)
		bad_file("odd hex length", w);
	char *b = xmalloc(len / 2);
	for (size_t i = 0; i < len / 2; i++) {
		unsigned v;
		if (sscanf(w + 2 * i, "%2x", &v) != 1)
			bad_file("bad hex", w);
		b[i] = (char)v;
	}
	*n = len / 2;
	return b;
}

static char *read_text(reader *r, size_t *n) {
	int is_null;
	return read_bytes(r, n, &is_null);
}

typedef struct {
	int64_t block_size;
	int32_t eagle;
	char *lora, *ns;
	size_t lora_len, ns_len;
	uint32_t *tokens;
	size_t n_tokens;
	uint32_t *mm_counts; /* mm_blocks entries */
	size_t mm_blocks;
	uint64_t *mm_hashes; /* sum(mm_counts) values */
} prompt;

static void read_prompt(reader *r, prompt *p) {
	memset(p, 0, sizeof *p);
	p->block_size = parse_i64(next_word(r));
	p->eagle = (int32_t)parse_u64(next_word(r));
	p->lora = read_text(r, &p->lora_len);
	p->ns = read_text(r, &p->ns_len);
	p->n_tokens = read_count(r);
	p->tokens = xmalloc(p->n_tokens * sizeof *p->tokens);
	for (size_t i = 0; i < p->n_tokens; i++) {
		uint64_t t = parse_u64(next_word(r));
		if (t > UINT32_MAX)
			bad_file("token out of range", r->word);
		p->tokens[i] = (uint32_t)t;
	}
	const char *w = next_word(r);
	if (strcmp(w, "-") == 0)
		return;
	p->mm_blocks = (size_t)parse_u64(w);
	p->mm_counts = xmalloc(p->mm_blocks * sizeof *p->mm_counts);
	size_t total = 0, cap = 16;
	p->mm_hashes = xmalloc(cap * sizeof *p->mm_hashes);
	for (size_t i = 0; i < p->mm_blocks; i++) {
		w = next_word(r);
		p->mm_counts[i] = strcmp(w, "-") == 0 ? 0 : (uint32_t)parse_u64(w);
		for (uint32_t j = 0; j < p->mm_counts[i]; j++) {
			if (total == cap) {
				cap *= 2;
				p->mm_hashes = realloc(p->mm_hashes, cap * sizeof *p->mm_hashes);
				if (p->mm_hashes == NULL)
					exit(2);
			}
			p->mm_hashes[total++] = parse_u64(next_word(r));
		}
	}
}

static void free_prompt(prompt *p) {
	free(p->lora);
	free(p->ns);
	free(p->tokens);
	free(p->mm_counts);
	free(p->mm_hashes);
}

static int32_t hash_prompt(const prompt *p, uint64_t *out, size_t cap, size_t *out_len) {
	return kvhash_block_hashes(p->tokens, p->n_tokens, p->block_size, p->lora, p->lora_len, p->ns,
	                           p->ns_len, p->eagle, p->mm_hashes, p->mm_counts, p->mm_blocks, out,
	                           cap, out_len);
}

static int32_t hash_prompt_both(const prompt *p, uint64_t *local, uint64_t *seq, size_t cap,
                                size_t *out_len) {
	return kvhash_block_and_sequence_hashes(p->tokens, p->n_tokens, p->block_size, p->lora,
	                                        p->lora_len, p->ns, p->ns_len, p->eagle, p->mm_hashes,
	                                        p->mm_counts, p->mm_blocks, local, seq, cap, out_len);
}

/* A buffer of n hashes, each SENTINEL. */
static uint64_t *sentinels(size_t n) {
	uint64_t *v = xmalloc(n * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = SENTINEL;
	return v;
}

static int all_sentinel(const uint64_t *v, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (v[i] != SENTINEL)
			return 0;
	return 1;
}

static int same_u64s(const uint64_t *a, const uint64_t *b, size_t n) {
	return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

/* ---- Vector cases ------------------------------------------------------- */

static void case_block(reader *r, const char *id) {
	prompt p;
	read_prompt(r, &p);
	uint64_t seed = parse_u64(next_word(r));
	size_t nb, ns;
	uint64_t *want_local = read_u64s(r, &nb);
	uint64_t *want_seq = read_u64s(r, &ns);

	size_t count = 12345;
	CHECK_ST(kvhash_block_count(p.n_tokens, p.block_size, p.eagle, &count), KVHASH_OK, id);
	CHECK(count == nb, "%s: block count %zu, want %zu", id, count, nb);
	CHECK(kvhash_seed(p.lora, p.lora_len, p.ns, p.ns_len) == seed, "%s: seed", id);

	/* The size query. */
	size_t len = 12345;
	CHECK_ST(hash_prompt(&p, NULL, 0, &len), nb ? KVHASH_ERR_BUFFER_TOO_SMALL : KVHASH_OK, id);
	CHECK(len == nb, "%s: size query says %zu, want %zu", id, len, nb);

	/* One spare slot shows nothing is written past the result. */
	uint64_t *out = xmalloc((nb + 1) * sizeof *out);
	for (size_t i = 0; i <= nb; i++)
		out[i] = SENTINEL;
	CHECK_ST(hash_prompt(&p, out, nb + 1, &len), KVHASH_OK, id);
	CHECK(len == nb && same_u64s(out, want_local, nb), "%s: block hashes differ", id);
	CHECK(out[nb] == SENTINEL, "%s: wrote past the result", id);

	if (nb > 0) {
		uint64_t *small = xmalloc(nb * sizeof *small);
		for (size_t i = 0; i < nb; i++)
			small[i] = SENTINEL;
		CHECK_ST(hash_prompt(&p, small, nb - 1, &len), KVHASH_ERR_BUFFER_TOO_SMALL, id);
		CHECK(len == nb, "%s: too small: needed %zu, want %zu", id, len, nb);
		int untouched = 1;
		for (size_t i = 0; i < nb; i++)
			untouched &= small[i] == SENTINEL;
		CHECK(untouched, "%s: a buffer too small was written to", id);
		free(small);
	}

	uint64_t *seq = xmalloc((ns + 1) * sizeof *seq);
	CHECK_ST(kvhash_sequence_hashes(out, nb, seq, ns + 1, &len), KVHASH_OK, id);
	CHECK(len == ns && same_u64s(seq, want_seq, ns), "%s: sequence hashes differ", id);

	/* Both in one call: the size query, then the same hashes in two
	 * buffers, each with a spare slot that must stay untouched. */
	CHECK_ST(hash_prompt_both(&p, NULL, NULL, 0, &len), nb ? KVHASH_ERR_BUFFER_TOO_SMALL : KVHASH_OK, id);
	CHECK(len == nb, "%s: fused size query says %zu, want %zu", id, len, nb);
	uint64_t *both_local = sentinels(nb + 1), *both_seq = sentinels(nb + 1);
	CHECK_ST(hash_prompt_both(&p, both_local, both_seq, nb + 1, &len), KVHASH_OK, id);
	CHECK(len == nb && same_u64s(both_local, want_local, nb), "%s: fused block hashes differ", id);
	CHECK(len == ns && same_u64s(both_seq, want_seq, ns), "%s: fused sequence hashes differ", id);
	CHECK(both_local[nb] == SENTINEL && both_seq[nb] == SENTINEL, "%s: fused wrote past the result", id);
	if (nb > 0) {
		free(both_local);
		free(both_seq);
		both_local = sentinels(nb);
		both_seq = sentinels(nb);
		CHECK_ST(hash_prompt_both(&p, both_local, both_seq, nb - 1, &len), KVHASH_ERR_BUFFER_TOO_SMALL, id);
		CHECK(len == nb, "%s: fused too small: needed %zu, want %zu", id, len, nb);
		CHECK(all_sentinel(both_local, nb) && all_sentinel(both_seq, nb),
		      "%s: fused buffers too small were written to", id);
	}

	free(both_local);
	free(both_seq);
	free(seq);
	free(out);
	free(want_local);
	free(want_seq);
	free_prompt(&p);
}

static void case_error(reader *r, const char *id) {
	prompt p;
	read_prompt(r, &p);
	char reason[64];
	snprintf(reason, sizeof reason, "%s", next_word(r));
	uint64_t out[64];
	for (size_t i = 0; i < 64; i++)
		out[i] = SENTINEL;
	size_t len = 12345;
	CHECK_ST(hash_prompt(&p, out, 64, &len), KVHASH_ERR_INVALID_ARGUMENT, id);
	CHECK(len == 0, "%s (%s): out_len %zu after an error", id, reason, len);
	CHECK(out[0] == SENTINEL, "%s (%s): hashes written on error", id, reason);
	CHECK(kvhash_last_error(NULL, 0) > 0, "%s (%s): no message", id, reason);
	/* An invalid input is invalid before any question of buffer size. */
	CHECK_ST(hash_prompt(&p, NULL, 0, &len), KVHASH_ERR_INVALID_ARGUMENT, id);
	/* The fused call validates alike. */
	uint64_t seq[64];
	for (size_t i = 0; i < 64; i++)
		seq[i] = SENTINEL;
	len = 12345;
	CHECK_ST(hash_prompt_both(&p, out, seq, 64, &len), KVHASH_ERR_INVALID_ARGUMENT, id);
	CHECK(len == 0, "%s (%s): fused out_len %zu after an error", id, reason, len);
	CHECK(out[0] == SENTINEL && seq[0] == SENTINEL, "%s (%s): fused hashes written on error", id, reason);
	CHECK_ST(hash_prompt_both(&p, NULL, NULL, 0, &len), KVHASH_ERR_INVALID_ARGUMENT, id);
	if (strncmp(reason, "block_size", 10) == 0) {
		size_t count;
		CHECK_ST(kvhash_block_count(p.n_tokens, p.block_size, p.eagle, &count),
		         KVHASH_ERR_INVALID_ARGUMENT, id);
	}
	free_prompt(&p);
}

static void case_seed(reader *r, const char *id) {
	size_t lora_len, ns_len;
	char *lora = read_text(r, &lora_len);
	char *ns = read_text(r, &ns_len);
	uint64_t want = parse_u64(next_word(r));
	uint64_t got = kvhash_seed(lora, lora_len, ns, ns_len);
	CHECK(got == want, "%s: seed %" PRIu64 ", want %" PRIu64, id, got, want);
	free(lora);
	free(ns);
}

static void case_chain(reader *r, const char *id) {
	size_t n, ns;
	uint64_t *local = read_u64s(r, &n);
	uint64_t *want = read_u64s(r, &ns);
	uint64_t *seq = xmalloc(n * sizeof *seq);
	size_t len;
	CHECK_ST(kvhash_sequence_hashes(local, n, seq, n, &len), KVHASH_OK, id);
	CHECK(len == ns && same_u64s(seq, want, ns), "%s: chain differs", id);
	int steps_ok = 1;
	for (size_t i = 1; i < ns; i++)
		steps_ok &= kvhash_chain_step(want[i - 1], local[i]) == want[i];
	CHECK(steps_ok, "%s: kvhash_chain_step differs from the chain", id);
	free(local);
	free(want);
	free(seq);
}

static void case_raw(reader *r, const char *id) {
	size_t n;
	int is_null;
	unsigned char *b = (unsigned char *)read_bytes(r, &n, &is_null);
	uint64_t want = parse_u64(next_word(r)), got = 0;
	CHECK_ST(kvhash_raw_hash(b, n, &got), KVHASH_OK, id);
	CHECK(got == want, "%s: raw hash differs", id);
	free(b);
}

static void test_vectors(const char *path) {
	static reader r;
	r.f = fopen(path, "r");
	if (r.f == NULL) {
		perror(path);
		exit(2);
	}
	if (strcmp(next_word(&r), "count") != 0)
		bad_file("no count line", r.word);
	size_t want = read_count(&r), seen = 0;
	char kind[16], id[512];
	while (fscanf(r.f, "%15s", kind) == 1) {
		snprintf(id, sizeof id, "%s", next_word(&r));
		if (strcmp(kind, "block") == 0)
			case_block(&r, id);
		else if (strcmp(kind, "error") == 0)
			case_error(&r, id);
		else if (strcmp(kind, "seed") == 0)
			case_seed(&r, id);
		else if (strcmp(kind, "chain") == 0)
			case_chain(&r, id);
		else if (strcmp(kind, "raw") == 0)
			case_raw(&r, id);
		else
			bad_file("unknown case kind", kind);
		seen++;
	}
	fclose(r.f);
	CHECK(seen == want && want > 0, "read %zu vector cases, the file has %zu", seen, want);
	printf("vectors: %zu cases\n", seen);
}

/* ---- Versions and last error -------------------------------------------- */

static void test_versions_and_errors(void) {
	const char *v = kvhash_version();
	CHECK(v != NULL && strlen(v) > 0 && v == kvhash_version(), "version is one static string");
	CHECK(strcmp(kvhash_spec_version(), "v1") == 0, "spec version %s", kvhash_spec_version());

	size_t len;
	CHECK_ST(kvhash_block_hashes(public_tokens, 12, 0, NULL, 0, NULL, 0, 0, NULL, NULL, 0, NULL, 0,
	                             &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "block size 0");
	size_t full = kvhash_last_error(NULL, 0);
	char buf[256];
	CHECK(kvhash_last_error(buf, sizeof buf) == full && strlen(buf) == full, "full message copy");
	CHECK(strstr(buf, "block size") != NULL, "message names the problem: %s", buf);
	memset(buf, 'x', sizeof buf);
	CHECK(kvhash_last_error(buf, 6) == full && strlen(buf) == 5, "a cut copy is NUL-terminated");
	CHECK(buf[6] == 'x', "a cut copy stays inside cap");
	CHECK(kvhash_last_error(NULL, 10) == full, "NULL buffer only sizes");
	/* Success does not clear the message. */
	uint64_t out[3];
	CHECK_ST(kvhash_block_hashes(public_tokens, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 3,
	                             &len),
	         KVHASH_OK, "public");
	CHECK(kvhash_last_error(NULL, 0) == full, "success keeps the last error");
}

/* ---- Bad input --------------------------------------------------------- */

static void test_bad_input(void) {
	uint64_t out[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
	size_t len = 999;
	const uint32_t *t = public_tokens;
	const char lora[] = "my-lora";

	CHECK_ST(kvhash_block_hashes(NULL, 0, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, NULL, 0, &len),
	         KVHASH_OK, "NULL with length 0 is empty");
	CHECK(len == 0, "no hashes of nothing");
	CHECK_ST(kvhash_block_hashes(NULL, 8, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL tokens");
	CHECK(strstr(last_error(), "tokens") != NULL, "message names tokens: %s", last_error());
	CHECK(len == 0 && out[0] == SENTINEL, "nothing written on error");
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4, NULL),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL out_len");
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, NULL, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL out with a capacity");
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 3, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL lora with a length");
	CHECK_ST(kvhash_block_hashes(t, 12, 4, lora, 7, NULL, 9, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL ns with a length");
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 2, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL mm_counts with mm_blocks");
	const uint32_t counts[2] = {1, 2};
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, counts, 2, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL mm_hashes with counts");
	const uint64_t mm[3] = {7, 8, 9};
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, mm, counts, 2, out, 4, &len),
	         KVHASH_OK, "multimodal");
	CHECK(len == 3 && out[0] != public_local[0] && out[2] == public_local[2],
	      "mm changes blocks 0 and 1 only");
	const uint32_t four[4] = {0, 0, 0, 0};
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, four, 4, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "mm entries for more blocks than there are");
	/* A count no block can have, with one real hash behind it: refused
	 * before anything is read (issue 10, item 5: it aborted the process,
	 * out of memory copying 32 GB). */
	const uint32_t huge[2] = {UINT32_MAX, 0};
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, mm, huge, 2, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "mm_counts[0] UINT32_MAX");
	CHECK(strstr(last_error(), "mm_counts[0] is 4294967295") != NULL, "message: %s", last_error());
	CHECK(len == 0, "out_len 0 on error");
	const uint32_t big[1] = {1u << 20};
	uint64_t mm_seq[4];
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, mm, big, 1, out, mm_seq, 4,
	                                          &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "mm_counts[0] 2^20 (fused call)");

	/* Lengths no buffer can have: refused, not read. */
	CHECK_ST(kvhash_block_hashes(t, SIZE_MAX, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "n_tokens SIZE_MAX");
	CHECK_ST(kvhash_block_hashes(t, (size_t)1 << 62, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4,
	                             &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "n_tokens 2^62");
	CHECK_ST(kvhash_block_hashes(t, 12, 4, lora, SIZE_MAX, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "lora_len SIZE_MAX");
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, SIZE_MAX, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "out_cap SIZE_MAX");
	CHECK_ST(kvhash_sequence_hashes(public_local, SIZE_MAX / 4, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "sequence n SIZE_MAX/4");
	size_t count;
	CHECK_ST(kvhash_block_count(SIZE_MAX, 4, 0, &count), KVHASH_ERR_INVALID_ARGUMENT,
	         "block_count n SIZE_MAX");

	/* Block sizes. */
	CHECK_ST(kvhash_block_hashes(t, 12, 0, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "block size 0");
	CHECK_ST(kvhash_block_hashes(t, 12, -4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "block size -4");
	CHECK_ST(kvhash_block_hashes(t, 12, INT64_MIN, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "block size INT64_MIN");
	CHECK_ST(kvhash_block_hashes(t, 12, INT64_MAX, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 4, &len),
	         KVHASH_OK, "block size INT64_MAX: no full block");
	CHECK(len == 0, "no block of INT64_MAX tokens");
	CHECK_ST(kvhash_block_count(12, 0, 1, &count), KVHASH_ERR_INVALID_ARGUMENT, "count, size 0");
	CHECK_ST(kvhash_block_count(12, 4, 0, NULL), KVHASH_ERR_INVALID_ARGUMENT, "NULL out_count");

	/* Small buffers say what they need. */
	for (size_t i = 0; i < 4; i++)
		out[i] = SENTINEL;
	CHECK_ST(kvhash_block_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 2, &len),
	         KVHASH_ERR_BUFFER_TOO_SMALL, "two slots for three hashes");
	CHECK(len == 3 && out[0] == SENTINEL, "needed 3 (got %zu), nothing written", len);
	CHECK(strstr(last_error(), "3 needed") != NULL, "message: %s", last_error());
	CHECK_ST(kvhash_sequence_hashes(public_local, 3, out, 1, &len), KVHASH_ERR_BUFFER_TOO_SMALL,
	         "sequence too small");
	CHECK(len == 3, "sequence needs 3");
	CHECK_ST(kvhash_sequence_hashes(NULL, 3, out, 4, &len), KVHASH_ERR_INVALID_ARGUMENT,
	         "NULL sequence input");
	CHECK_ST(kvhash_sequence_hashes(public_local, 3, out, 4, NULL), KVHASH_ERR_INVALID_ARGUMENT,
	         "sequence NULL out_len");
	CHECK_ST(kvhash_sequence_hashes(NULL, 0, NULL, 0, &len), KVHASH_OK, "empty chain");
	CHECK(len == 0, "empty chain is empty");

	/* Block and sequence hashes in one call: both outputs are checked. */
	uint64_t seq[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
	for (size_t i = 0; i < 4; i++)
		out[i] = SENTINEL;
	len = 999;
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, NULL, 4,
	                                          &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "fused: NULL out_sequence with a capacity");
	CHECK(strstr(last_error(), "out_sequence") != NULL, "message names out_sequence: %s", last_error());
	CHECK(len == 0 && out[0] == SENTINEL, "fused: nothing written on error");
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, NULL, seq, 4,
	                                          &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "fused: NULL out_local with a capacity");
	CHECK(strstr(last_error(), "out_local") != NULL, "message names out_local: %s", last_error());
	CHECK(seq[0] == SENTINEL, "fused: nothing written on error");
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, seq, 4,
	                                          NULL),
	         KVHASH_ERR_INVALID_ARGUMENT, "fused: NULL out_len");
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, seq, 2,
	                                          &len),
	         KVHASH_ERR_BUFFER_TOO_SMALL, "fused: two slots for three hashes");
	CHECK(len == 3 && all_sentinel(out, 4) && all_sentinel(seq, 4),
	      "fused: needed 3 (got %zu), nothing written", len);
	CHECK(strstr(last_error(), "3 needed") != NULL, "fused message: %s", last_error());
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, NULL, NULL, 0,
	                                          &len),
	         KVHASH_ERR_BUFFER_TOO_SMALL, "fused: size query");
	CHECK(len == 3, "fused: size query says %zu", len);
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 0, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, seq, 4,
	                                          &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "fused: block size 0");
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, four, 4, out, seq, 4,
	                                          &len),
	         KVHASH_ERR_INVALID_ARGUMENT, "fused: mm entries for more blocks than there are");
	CHECK_ST(kvhash_block_and_sequence_hashes(t, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, seq, 3,
	                                          &len),
	         KVHASH_OK, "fused: public vector");
	CHECK(len == 3 && same_u64s(out, public_local, 3) && same_u64s(seq, public_seq, 3),
	      "fused: public vector hashes");
	CHECK(out[3] == SENTINEL && seq[3] == SENTINEL, "fused: nothing written past out_cap");

	/* kvhash_seed cannot return a status: 0 plus the last error. */
	CHECK(kvhash_seed(NULL, 5, NULL, 0) == 0, "seed of NULL lora with a length");
	CHECK(strstr(last_error(), "lora") != NULL, "seed message: %s", last_error());
	CHECK(kvhash_seed(NULL, 0, NULL, 0) == 1337, "seed without options");
	CHECK(kvhash_seed("", 0, "", 0) == 1337, "empty names are absent");

	uint64_t raw = 0;
	CHECK_ST(kvhash_raw_hash((const uint8_t *)"test data", 9, &raw), KVHASH_OK, "raw hash");
	CHECK(raw == UINT64_C(13226331709069118873), "raw hash of \"test data\"");
	CHECK_ST(kvhash_raw_hash(NULL, 3, &raw), KVHASH_ERR_INVALID_ARGUMENT, "raw hash of NULL with a length");
	CHECK(strstr(last_error(), "data") != NULL, "raw message: %s", last_error());
	CHECK_ST(kvhash_raw_hash((const uint8_t *)"x", 1, NULL), KVHASH_ERR_INVALID_ARGUMENT, "raw hash NULL out");
	CHECK_ST(kvhash_raw_hash(NULL, 0, &raw), KVHASH_OK, "raw hash of nothing");
}

/* ---- The index ---------------------------------------------------------- */

typedef struct {
	uint64_t ids[16];
	uint32_t ranks[16];
	uint32_t scores[16];
	uint64_t sizes[16];
	size_t n;
} match_list;

static int32_t find(uint64_t h, const uint64_t *q, size_t n, size_t cap, match_list *m) {
	return kvhash_index_find_matches(h, q, n, 0, m->ids, m->ranks, m->scores, m->sizes, cap, &m->n);
}

/* The score of (id, rank) in m, or -1 when absent. */
static long score_of(const match_list *m, uint64_t id, uint32_t rank) {
	for (size_t i = 0; i < m->n; i++)
		if (m->ids[i] == id && m->ranks[i] == rank)
			return m->scores[i];
	return -1;
}

static char *dump(uint64_t h, size_t *n) {
	size_t need = 0;
	int32_t st = kvhash_index_dump_jsonl(h, NULL, 0, &need);
	CHECK(st == KVHASH_OK || st == KVHASH_ERR_BUFFER_TOO_SMALL, "dump size query: %d", (int)st);
	char *buf = xmalloc(need + 1);
	CHECK_ST(kvhash_index_dump_jsonl(h, buf, need, n), KVHASH_OK, "dump");
	buf[*n] = 0;
	return buf;
}

static void test_index_basics(void) {
	uint64_t h = 0;
	CHECK_ST(kvhash_index_new(3, &h), KVHASH_ERR_INVALID_ARGUMENT, "mode 3");
	CHECK_ST(kvhash_index_new(-1, &h), KVHASH_ERR_INVALID_ARGUMENT, "mode -1");
	CHECK_ST(kvhash_index_new(KVHASH_MODE_WARN, NULL), KVHASH_ERR_INVALID_ARGUMENT, "NULL handle");
	CHECK_ST(kvhash_index_new(KVHASH_MODE_WARN, &h), KVHASH_OK, "new");
	CHECK(h != 0, "handles are never 0");

	/* Worker 1 stores the public prompt through the arrays API; worker 2
	 * rank 1 its first block through JSON; worker 3 through a router event. */
	const uint64_t engine1[3] = {1001, 1002, 1003};
	CHECK_ST(kvhash_index_apply_stored(h, 1, 0, 1, 0, 0, engine1, public_local, 2), KVHASH_OK,
	         "stored, root");
	CHECK_ST(kvhash_index_apply_stored(h, 1, 0, 2, 1, 1002, engine1 + 2, public_local + 2, 1),
	         KVHASH_OK, "stored, with parent");
	const char *ev2 = "{\"event_id\":1,\"data\":{\"stored\":{\"parent_hash\":null,\"blocks\":"
	                  "[{\"block_hash\":2001,\"tokens_hash\":14643705804678351452}]}},\"dp_rank\":1}";
	CHECK_ST(kvhash_index_apply_json(h, 2, ev2, strlen(ev2)), KVHASH_OK, "stored JSON");
	const char *ev3 = "{\"worker_id\":3,\"storage_tier\":\"host_pinned\",\"event\":{\"event_id\":1,"
	                  "\"data\":{\"stored\":{\"parent_hash\":null,\"blocks\":[{\"block_hash\":3001,"
	                  "\"tokens_hash\":14643705804678351452},{\"block_hash\":3002,"
	                  "\"tokens_hash\":16777012769546811212}]}}}}";
	CHECK_ST(kvhash_index_apply_router_event_json(h, ev3, strlen(ev3)), KVHASH_OK, "router event");

	match_list m;
	CHECK_ST(find(h, public_local, 3, 16, &m), KVHASH_OK, "find");
	CHECK(m.n == 3, "three workers match, got %zu", m.n);
	CHECK(score_of(&m, 1, 0) == 3 && score_of(&m, 2, 1) == 1 && score_of(&m, 3, 0) == 2,
	      "scores %ld %ld %ld", score_of(&m, 1, 0), score_of(&m, 2, 1), score_of(&m, 3, 0));
	CHECK(m.ids[0] == 1 && m.ids[1] == 2 && m.ids[2] == 3, "sorted by worker");
	CHECK(m.sizes[0] == 3 && m.sizes[1] == 1 && m.sizes[2] == 2, "tree sizes");
	CHECK_ST(find(h, public_local, 3, 2, &m), KVHASH_ERR_BUFFER_TOO_SMALL, "find, 2 slots");
	CHECK(m.n == 3, "find needs 3, says %zu", m.n);
	size_t need = 0;
	CHECK_ST(kvhash_index_find_matches(h, public_local, 3, 1, NULL, NULL, NULL, NULL, 0, &need),
	         KVHASH_ERR_BUFFER_TOO_SMALL, "find size query");
	CHECK(need >= 1, "early exit still finds workers");
	CHECK_ST(find(h, NULL, 0, 16, &m), KVHASH_OK, "empty query");
	CHECK(m.n == 0, "nothing matches nothing");

	uint64_t ids[8];
	uint32_t ranks[8];
	size_t n;
	CHECK_ST(kvhash_index_workers(h, ids, ranks, 8, &n), KVHASH_OK, "workers");
	CHECK(n == 3 && ids[0] == 1 && ids[1] == 2 && ranks[1] == 1 && ids[2] == 3, "worker list");
	CHECK_ST(kvhash_index_workers(h, ids, ranks, 1, &n), KVHASH_ERR_BUFFER_TOO_SMALL, "workers, 1");
	CHECK(n == 3, "workers needs 3");

	/* Dump, then replay line by line into a fresh index. */
	size_t dlen;
	char *d = dump(h, &dlen);
	CHECK(dlen > 0 && d[dlen - 1] == '\n', "dump is JSON lines");
	char small[8];
	memset(small, '#', sizeof small);
	CHECK_ST(kvhash_index_dump_jsonl(h, small, sizeof small, &n), KVHASH_ERR_BUFFER_TOO_SMALL,
	         "dump too small");
	CHECK(n == dlen && small[0] == '#', "dump needs %zu (said %zu), writes nothing", dlen, n);
	uint64_t r = 0;
	CHECK_ST(kvhash_index_new(KVHASH_MODE_WARN, &r), KVHASH_OK, "replay index");
	int lines = 0;
	for (char *line = d, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1, lines++)
		CHECK_ST(kvhash_index_apply_router_event_json(r, line, (size_t)(nl - line)), KVHASH_OK,
		         "replay line");
	size_t rlen;
	char *rd = dump(r, &rlen);
	CHECK(lines > 0 && rlen == dlen && strcmp(d, rd) == 0, "replay rebuilds the same dump");
	free(d);
	free(rd);

	/* Stats. */
	char stats[4096];
	CHECK_ST(kvhash_index_stats_json(h, stats, 4, &n), KVHASH_ERR_BUFFER_TOO_SMALL, "stats small");
	CHECK(n > 4 && n < sizeof stats, "stats needs %zu", n);
	CHECK_ST(kvhash_index_stats_json(h, stats, sizeof stats - 1, &n), KVHASH_OK, "stats");
	stats[n] = 0;
	CHECK(strstr(stats, "\"mode\":\"warn\"") != NULL, "stats: %s", stats);

	/* Removal, clearing and leaving. */
	const uint64_t gone[1] = {1003};
	CHECK_ST(kvhash_index_apply_removed(h, 1, 0, 3, gone, 1), KVHASH_OK, "removed");
	CHECK_ST(find(h, public_local, 3, 16, &m), KVHASH_OK, "find after remove");
	CHECK(score_of(&m, 1, 0) == 2, "worker 1 lost its third block");
	const char *rm = "{\"event_id\":4,\"data\":{\"removed\":{\"block_hashes\":[1002]}}}";
	CHECK_ST(kvhash_index_apply_json(h, 1, rm, strlen(rm)), KVHASH_OK, "removed JSON");
	const char *cl = "{\"event_id\":2,\"data\":\"cleared\",\"dp_rank\":1}";
	CHECK_ST(kvhash_index_apply_json(h, 2, cl, strlen(cl)), KVHASH_OK, "cleared JSON");
	CHECK_ST(find(h, public_local, 3, 16, &m), KVHASH_OK, "find after clear");
	CHECK(score_of(&m, 1, 0) == 1 && score_of(&m, 2, 1) == -1, "worker 2 rank 1 was cleared");
	CHECK_ST(kvhash_index_clear_worker(h, 3, 0), KVHASH_OK, "clear worker");
	CHECK_ST(kvhash_index_clear_all_blocks(h, 1), KVHASH_OK, "clear all blocks");
	CHECK_ST(find(h, public_local, 3, 16, &m), KVHASH_OK, "find after clears");
	CHECK(m.n == 0, "no blocks left, %zu matches", m.n);
	CHECK_ST(kvhash_index_remove_worker(h, 2), KVHASH_OK, "remove worker");
	CHECK_ST(kvhash_index_workers(h, ids, ranks, 8, &n), KVHASH_OK, "workers after remove");
	CHECK(n == 2 && ids[0] == 1 && ids[1] == 3, "cleared workers stay, removed ones leave");

	/* Bad events. */
	const char *bad[] = {"{\"event_id\":", "[]", "{\"event_id\":1,\"data\":{\"evicted\":{}}}",
	                     "{\"event_id\":1,\"data\":{\"removed\":{\"block_hashes\":[-1]}}}", "null"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECK_ST(kvhash_index_apply_json(h, 1, bad[i], strlen(bad[i])), KVHASH_ERR_DECODE, bad[i]);
	CHECK_ST(kvhash_index_apply_json(h, 1, "", 0), KVHASH_ERR_DECODE, "empty JSON");
	CHECK_ST(kvhash_index_apply_json(h, 1, NULL, 10), KVHASH_ERR_INVALID_ARGUMENT, "NULL JSON");
	CHECK_ST(kvhash_index_apply_router_event_json(h, "{", 1), KVHASH_ERR_DECODE, "bad router event");
	CHECK_ST(kvhash_index_apply_stored(h, 1, 0, 9, 0, 0, NULL, public_local, 3),
	         KVHASH_ERR_INVALID_ARGUMENT, "NULL block hashes");
	CHECK_ST(kvhash_index_apply_removed(h, 1, 0, 9, NULL, 3), KVHASH_ERR_INVALID_ARGUMENT,
	         "NULL removed hashes");
	CHECK_ST(kvhash_index_stats_json(h, NULL, 0, NULL), KVHASH_ERR_INVALID_ARGUMENT, "NULL out_len");
	CHECK_ST(kvhash_index_set_mode(h, 9), KVHASH_ERR_INVALID_ARGUMENT, "mode 9");

	CHECK_ST(kvhash_index_free(h), KVHASH_OK, "free");
	CHECK_ST(kvhash_index_free(r), KVHASH_OK, "free replay");
}

static void test_enforce_mode(void) {
	uint64_t h;
	CHECK_ST(kvhash_index_new(KVHASH_MODE_ENFORCE, &h), KVHASH_OK, "new enforce");
	const uint64_t a[1] = {1};
	CHECK_ST(kvhash_index_apply_stored(h, 1, 0, 1, 0, 0, a, public_local, 1), KVHASH_OK, "store");
	/* The same content under another engine hash: a stability violation. */
	const uint64_t b[1] = {2};
	CHECK_ST(kvhash_index_apply_stored(h, 2, 0, 1, 0, 0, b, public_local, 1), KVHASH_ERR_REJECTED,
	         "hash mismatch, enforced");
	CHECK(strlen(last_error()) > 0, "rejection has a message");
	const uint64_t unknown[1] = {999};
	CHECK_ST(kvhash_index_apply_removed(h, 1, 0, 2, unknown, 1), KVHASH_ERR_REJECTED,
	         "remove of an unknown block");
	CHECK_ST(kvhash_index_apply_stored(h, 1, 0, 3, 1, 12345, a, public_local, 1), KVHASH_ERR_REJECTED,
	         "unknown parent");
	CHECK_ST(kvhash_index_set_mode(h, KVHASH_MODE_WARN), KVHASH_OK, "to warn");
	const uint64_t c[1] = {3};
	CHECK_ST(kvhash_index_apply_stored(h, 3, 0, 1, 0, 0, c, public_local, 1), KVHASH_OK,
	         "hash mismatch, warned");
	char stats[4096];
	size_t n;
	CHECK_ST(kvhash_index_stats_json(h, stats, sizeof stats - 1, &n), KVHASH_OK, "stats");
	stats[n] = 0;
	CHECK(strstr(stats, "\"hash_mismatch\":2") != NULL, "mismatches counted: %s", stats);
	CHECK_ST(kvhash_index_free(h), KVHASH_OK, "free enforce");
}

static void test_unknown_handles(void) {
	uint64_t freed;
	CHECK_ST(kvhash_index_new(KVHASH_MODE_WARN, &freed), KVHASH_OK, "new");
	CHECK_ST(kvhash_index_free(freed), KVHASH_OK, "free");
	const uint64_t handles[3] = {0, freed, 0xFFFFFFFFFFFFFFFFULL};
	for (int i = 0; i < 3; i++) {
		uint64_t h = handles[i];
		char ctx[64], buf[64];
		uint64_t ids[4], sizes[4];
		uint32_t ranks[4], scores[4];
		size_t n;
		snprintf(ctx, sizeof ctx, "handle %" PRIu64, h);
		CHECK_ST(kvhash_index_free(h), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_set_mode(h, 1), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_apply_json(h, 1, "{}", 2), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_apply_router_event_json(h, "{}", 2), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_apply_stored(h, 1, 0, 1, 0, 0, public_local, public_local, 1),
		         KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_apply_removed(h, 1, 0, 1, public_local, 1), KVHASH_ERR_UNKNOWN_HANDLE,
		         ctx);
		CHECK_ST(kvhash_index_clear_worker(h, 1, 0), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_clear_all_blocks(h, 1), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_remove_worker(h, 1), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_find_matches(h, public_local, 3, 0, ids, ranks, scores, sizes, 4, &n),
		         KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_dump_jsonl(h, buf, sizeof buf, &n), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_stats_json(h, buf, sizeof buf, &n), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
		CHECK_ST(kvhash_index_workers(h, ids, ranks, 4, &n), KVHASH_ERR_UNKNOWN_HANDLE, ctx);
	}
}

/* ---- Threads ------------------------------------------------------------ */

#define THREADS 8
#define ROUNDS 2000

typedef struct {
	int id;
	uint64_t index;
	pthread_barrier_t *barrier;
	int failures;
	char first[512];
} worker_arg;

static void thread_fail(worker_arg *w, const char *what) {
	if (w->failures++ == 0)
		snprintf(w->first, sizeof w->first, "%s (last error: %s)", what, last_error());
}

static void *worker_main(void *p) {
	worker_arg *w = p;
	/* Each thread fails with its own block size, waits until all have, and
	 * must then read back its own message. */
	int64_t bad = -(int64_t)(w->id + 1);
	char want[64];
	snprintf(want, sizeof want, "block size is %" PRId64 ",", bad);
	size_t len;
	if (kvhash_block_hashes(public_tokens, 12, bad, NULL, 0, NULL, 0, 0, NULL, NULL, 0, NULL, 0,
	                        &len) != KVHASH_ERR_INVALID_ARGUMENT)
		thread_fail(w, "bad block size accepted");
	pthread_barrier_wait(w->barrier);

	uint64_t out[3], seq[3], ids[THREADS + 2], sizes[THREADS + 2];
	uint32_t ranks[THREADS + 2], scores[THREADS + 2];
	for (int i = 0; i < ROUNDS; i++) {
		if (kvhash_block_hashes(public_tokens, 12, 4, NULL, 0, NULL, 0, 0, NULL, NULL, 0, out, 3,
		                        &len) != KVHASH_OK ||
		    len != 3 || memcmp(out, public_local, sizeof out) != 0)
			thread_fail(w, "block hashes");
		if (kvhash_sequence_hashes(out, 3, seq, 3, &len) != KVHASH_OK ||
		    memcmp(seq, public_seq, sizeof seq) != 0)
			thread_fail(w, "sequence hashes");
		/* Each thread stores and removes its own block while all query. */
		uint64_t mine = ((uint64_t)w->id << 32) | (uint64_t)i;
		if (kvhash_index_apply_stored(w->index, 100 + (uint64_t)w->id, 0, (uint64_t)i, 0, 0, &mine,
		                              &mine, 1) != KVHASH_OK)
			thread_fail(w, "apply stored");
		size_t n;
		if (kvhash_index_find_matches(w->index, public_local, 3, 0, ids, ranks, scores, sizes,
		                              THREADS + 2, &n) != KVHASH_OK ||
		    n != 1 || ids[0] != 1 || scores[0] != 3)
			thread_fail(w, "find matches");
		if (kvhash_index_apply_removed(w->index, 100 + (uint64_t)w->id, 0, (uint64_t)i, &mine, 1) !=
		    KVHASH_OK)
			thread_fail(w, "apply removed");
		if (i % 500 == 0) {
			uint64_t own;
			if (kvhash_index_new(KVHASH_MODE_WARN, &own) != KVHASH_OK ||
			    kvhash_index_free(own) != KVHASH_OK)
				thread_fail(w, "new/free");
		}
	}
	/* Other threads' failures and this thread's successes since did not
	 * touch this thread's message. */
	char msg[256];
	kvhash_last_error(msg, sizeof msg);
	if (w->failures == 0 && strstr(msg, want) == NULL) {
		w->failures++;
		snprintf(w->first, sizeof w->first, "last error \"%.200s\" is not this thread's (%s)", msg, want);
	}
	/* A handle freed on this thread is unknown, and says which. */
	uint64_t own;
	if (kvhash_index_new(KVHASH_MODE_WARN, &own) != KVHASH_OK || kvhash_index_free(own) != KVHASH_OK ||
	    kvhash_index_free(own) != KVHASH_ERR_UNKNOWN_HANDLE)
		thread_fail(w, "double free");
	snprintf(want, sizeof want, "unknown index handle: %" PRIu64 " ", own);
	kvhash_last_error(msg, sizeof msg);
	if (strstr(msg, want) == NULL)
		thread_fail(w, "double free message");
	return NULL;
}

static void test_threads(void) {
	uint64_t h;
	CHECK_ST(kvhash_index_new(KVHASH_MODE_WARN, &h), KVHASH_OK, "shared index");
	const uint64_t engine[3] = {11, 12, 13};
	CHECK_ST(kvhash_index_apply_stored(h, 1, 0, 1, 0, 0, engine, public_local, 3), KVHASH_OK,
	         "shared store");
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, THREADS);
	pthread_t th[THREADS];
	worker_arg args[THREADS];
	for (int i = 0; i < THREADS; i++) {
		args[i] = (worker_arg){.id = i, .index = h, .barrier = &barrier};
		CHECK(pthread_create(&th[i], NULL, worker_main, &args[i]) == 0, "pthread_create %d", i);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK(args[i].failures == 0, "thread %d: %d failures, first: %s", i, args[i].failures,
		      args[i].first);
	}
	pthread_barrier_destroy(&barrier);
	uint64_t ids[THREADS + 2];
	uint32_t ranks[THREADS + 2];
	size_t n;
	CHECK_ST(kvhash_index_workers(h, ids, ranks, THREADS + 2, &n), KVHASH_OK, "workers after threads");
	CHECK(n == THREADS + 1, "every thread's worker is known: %zu", n);
	CHECK_ST(kvhash_index_free(h), KVHASH_OK, "free shared");
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: %s VECTORS.txt\n", argv[0]);
		return 2;
	}
	test_versions_and_errors();
	test_vectors(argv[1]);
	test_bad_input();
	test_index_basics();
	test_enforce_mode();
	test_unknown_handles();
	test_threads();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

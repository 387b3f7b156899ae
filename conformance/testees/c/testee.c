/* Conformance testee of the C ABI (libkvhash.so): it answers the testee
 * protocol of conformance/README.md by calling the exports of kvhash.h.
 * It translates JSON to C arguments and status codes back to answers; it
 * computes nothing itself. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kvhash.h"
#include "out.h"

/* err holds the message of a failed request: a protocol problem found
 * here, or the library's kvhash_last_error text. */
static char err[4096];

static const char *fail(const char *msg) {
    snprintf(err, sizeof err, "%s", msg);
    return err;
}

static const char *lib_error(const char *call, int32_t status) {
    char msg[3000];
    kvhash_last_error(msg, sizeof msg);
    snprintf(err, sizeof err, "%s: status %d: %s", call, (int)status, msg);
    return err;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1); /* never NULL: a zero-length input is still a valid pointer */
    if (p == NULL) abort();
    return p;
}

/* u64 reads the protocol's decimal-string u64. */
static int u64(const jval *v, uint64_t *out) {
    if (v == NULL || v->type != J_STRING || v->len == 0 || v->len > 20) return 0;
    for (size_t i = 0; i < v->len; i++)
        if (v->text[i] < '0' || v->text[i] > '9') return 0;
    errno = 0;
    unsigned long long n = strtoull(v->text, NULL, 10);
    if (errno != 0) return 0;
    *out = (uint64_t)n;
    return 1;
}

static int integer(const jval *v, long long *out) {
    if (v == NULL || v->type != J_NUMBER) return 0;
    char tmp[32];
    if (v->len >= sizeof tmp) return 0;
    memcpy(tmp, v->text, v->len);
    tmp[v->len] = 0;
    char *end;
    errno = 0;
    *out = strtoll(tmp, &end, 10);
    return errno == 0 && *end == 0;
}

/* name reads a string-or-null option; NULL with length 0 means absent. */
static int name(const jval *v, const char **s, size_t *n) {
    if (v == NULL || v->type == J_NULL) { *s = NULL; *n = 0; return 1; }
    if (v->type != J_STRING) return 0;
    *s = v->text;
    *n = v->len;
    return 1;
}

static int u64_array(const jval *v, uint64_t **out, size_t *n) {
    if (v == NULL || v->type != J_ARRAY) return 0;
    *out = xmalloc(v->n * sizeof(uint64_t));
    *n = v->n;
    for (size_t i = 0; i < v->n; i++)
        if (!u64(&v->items[i], &(*out)[i])) return 0;
    return 1;
}

static void out_u64_array(const uint64_t *v, size_t n) {
    out_str("[");
    for (size_t i = 0; i < n; i++) {
        if (i) out_str(",");
        out_u64(v[i]);
    }
    out_str("]");
}

static const char *op_hello(void) {
    out_str("\"binding\":\"c\",\"library_version\":");
    out_json_string(kvhash_version(), strlen(kvhash_version()));
    out_str(",\"spec_version\":");
    out_json_string(kvhash_spec_version(), strlen(kvhash_spec_version()));
    out_str(",\"ops\":[\"hello\",\"block_hashes\",\"sequence_hashes\",\"seed\",\"chain_step\",\"raw_hash\",\"index\"]");
    return NULL;
}

static const char *op_block_hashes(const jval *req) {
    const jval *tokens = json_get(req, "tokens"), *opts = json_get(req, "options");
    long long block_size;
    if (tokens == NULL || tokens->type != J_ARRAY || !integer(json_get(req, "block_size"), &block_size) ||
        opts == NULL || opts->type != J_OBJECT)
        return fail("block_hashes needs tokens, block_size and options");
    uint32_t *tok = xmalloc(tokens->n * sizeof(uint32_t));
    for (size_t i = 0; i < tokens->n; i++) {
        long long t;
        if (!integer(&tokens->items[i], &t) || t < 0 || t > UINT32_MAX) { free(tok); return fail("token is not a u32"); }
        tok[i] = (uint32_t)t;
    }
    const char *lora, *ns;
    size_t lora_len, ns_len;
    const jval *eagle = json_get(opts, "eagle"), *mm = json_get(opts, "mm_hashes");
    if (!name(json_get(opts, "lora_name"), &lora, &lora_len) || !name(json_get(opts, "cache_namespace"), &ns, &ns_len) ||
        eagle == NULL || (eagle->type != J_TRUE && eagle->type != J_FALSE)) {
        free(tok);
        return fail("bad options");
    }
    /* mm_hashes: one count per entry (null or [] = 0) and the values concatenated. */
    size_t mm_blocks = (mm != NULL && mm->type == J_ARRAY) ? mm->n : 0, mm_total = 0;
    for (size_t i = 0; i < mm_blocks; i++)
        if (mm->items[i].type == J_ARRAY) mm_total += mm->items[i].n;
    uint32_t *mm_counts = xmalloc(mm_blocks * sizeof(uint32_t));
    uint64_t *mm_hashes = xmalloc(mm_total * sizeof(uint64_t));
    size_t k = 0;
    const char *bad = NULL;
    for (size_t i = 0; i < mm_blocks && bad == NULL; i++) {
        const jval *e = &mm->items[i];
        mm_counts[i] = e->type == J_ARRAY ? (uint32_t)e->n : 0;
        for (size_t j = 0; e->type == J_ARRAY && j < e->n; j++)
            if (!u64(&e->items[j], &mm_hashes[k++])) bad = "mm hash is not a u64 string";
    }
    /* At most one block a token (block_size >= 1), so n_tokens + 1 always fits. */
    size_t cap = tokens->n + 1, n = 0;
    uint64_t *out = xmalloc(cap * sizeof(uint64_t));
    int32_t st = 0;
    if (bad == NULL) {
        st = kvhash_block_hashes(tok, tokens->n, (int64_t)block_size, lora, lora_len, ns, ns_len,
                                 eagle->type == J_TRUE, mm_hashes, mm_counts, mm_blocks, out, cap, &n);
        if (st != KVHASH_OK) bad = lib_error("kvhash_block_hashes", st);
        else {
            out_str("\"block_hashes\":");
            out_u64_array(out, n);
        }
    }
    free(tok); free(mm_counts); free(mm_hashes); free(out);
    return bad == err ? err : (bad ? fail(bad) : NULL);
}

static const char *op_sequence_hashes(const jval *req) {
    uint64_t *in, *out;
    size_t n, got = 0;
    if (!u64_array(json_get(req, "block_hashes"), &in, &n)) return fail("block_hashes must be u64 strings");
    out = xmalloc(n * sizeof(uint64_t));
    int32_t st = kvhash_sequence_hashes(in, n, out, n, &got);
    const char *e = NULL;
    if (st != KVHASH_OK) e = lib_error("kvhash_sequence_hashes", st);
    else {
        out_str("\"sequence_hashes\":");
        out_u64_array(out, got);
    }
    free(in);
    free(out);
    return e;
}

static const char *op_seed(const jval *req) {
    const char *lora, *ns;
    size_t lora_len, ns_len;
    if (!name(json_get(req, "lora_name"), &lora, &lora_len) || !name(json_get(req, "cache_namespace"), &ns, &ns_len))
        return fail("seed needs lora_name and cache_namespace");
    out_str("\"seed\":");
    out_u64(kvhash_seed(lora, lora_len, ns, ns_len));
    return NULL;
}

static const char *op_chain_step(const jval *req) {
    uint64_t parent, local;
    if (!u64(json_get(req, "parent"), &parent) || !u64(json_get(req, "local"), &local))
        return fail("chain_step needs parent and local");
    out_str("\"hash\":");
    out_u64(kvhash_chain_step(parent, local));
    return NULL;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static const char *op_raw_hash(const jval *req) {
    const char *hex;
    size_t hex_len;
    if (!name(json_get(req, "bytes_hex"), &hex, &hex_len) || hex_len % 2 != 0)
        return fail("raw_hash needs bytes_hex, an even-length hex string");
    size_t n = hex_len / 2;
    uint8_t *data = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(data);
            return fail("bytes_hex is not hexadecimal");
        }
        data[i] = (uint8_t)(hi << 4 | lo);
    }
    uint64_t h;
    int32_t st = kvhash_raw_hash(data, n, &h);
    free(data);
    if (st != KVHASH_OK) return lib_error("kvhash_raw_hash", st);
    out_str("\"hash\":");
    out_u64(h);
    return NULL;
}

/* The ABI's status codes, as the protocol's error kinds. */
static const char *kind(int32_t st) {
    switch (st) {
    case KVHASH_ERR_DECODE: return "decode";
    case KVHASH_ERR_REJECTED: return "rejected";
    case KVHASH_ERR_INVALID_ARGUMENT: return "invalid_argument";
    default: return "internal";
    }
}

static void step_status(int32_t st) {
    if (st == KVHASH_OK) { out_str("{\"ok\":true}"); return; }
    char msg[2048];
    kvhash_last_error(msg, sizeof msg);
    out_str("{\"error\":\"");
    out_str(kind(st));
    out_str("\",\"message\":");
    out_json_string(msg, strlen(msg));
    out_str("}");
}

static void step_find_matches(uint64_t h, const jval *arg) {
    uint64_t *hashes;
    size_t n;
    const jval *early = json_get(arg, "early_exit");
    if (!u64_array(json_get(arg, "hashes"), &hashes, &n) || early == NULL) {
        out_str("{\"error\":\"invalid_argument\",\"message\":\"bad find_matches step\"}");
        return;
    }
    size_t cap = 16, got = 0;
    uint64_t *ids = NULL, *sizes = NULL;
    uint32_t *ranks = NULL, *scores = NULL;
    int32_t st;
    for (;;) { /* grow until the matches fit */
        ids = realloc(ids, cap * sizeof *ids); sizes = realloc(sizes, cap * sizeof *sizes);
        ranks = realloc(ranks, cap * sizeof *ranks); scores = realloc(scores, cap * sizeof *scores);
        if (!ids || !sizes || !ranks || !scores) abort();
        st = kvhash_index_find_matches(h, hashes, n, early->type == J_TRUE, ids, ranks, scores, sizes, cap, &got);
        if (st != KVHASH_ERR_BUFFER_TOO_SMALL) break;
        cap = got;
    }
    if (st != KVHASH_OK) step_status(st);
    else {
        out_str("{\"scores\":[");
        for (size_t i = 0; i < got; i++) {
            out_str(i ? ",{\"worker_id\":" : "{\"worker_id\":");
            out_u64(ids[i]);
            out_str(",\"dp_rank\":"); out_uint(ranks[i]);
            out_str(",\"score\":"); out_uint(scores[i]);
            out_str(",\"tree_size\":"); out_u64(sizes[i]);
            out_str("}");
        }
        out_str("]}");
    }
    free(hashes); free(ids); free(sizes); free(ranks); free(scores);
}

/* text_result calls a (handle, buf, cap, out_len) export, growing buf until
 * the text fits; the caller frees the result. */
static char *text_result(int32_t (*fn)(uint64_t, char *, size_t, size_t *), uint64_t h,
                         size_t *got, int32_t *st) {
    size_t cap = 4096;
    char *buf = NULL;
    for (;;) {
        buf = realloc(buf, cap);
        if (buf == NULL) abort();
        *st = fn(h, buf, cap, got);
        if (*st != KVHASH_ERR_BUFFER_TOO_SMALL) return buf;
        cap = *got + 1;
    }
}

static void step_stats(uint64_t h) {
    size_t got = 0;
    int32_t st;
    char *buf = text_result(kvhash_index_stats_json, h, &got, &st);
    if (st != KVHASH_OK) step_status(st);
    else {
        out_str("{\"stats\":");
        out_raw(buf, got); /* the library's JSON, passed through */
        out_str("}");
    }
    free(buf);
}

/* The dump's JSON lines, each passed through as a JSON string. */
static void step_dump(uint64_t h) {
    size_t got = 0;
    int32_t st;
    char *buf = text_result(kvhash_index_dump_jsonl, h, &got, &st);
    if (st != KVHASH_OK) step_status(st);
    else {
        out_str("{\"events\":[");
        size_t start = 0;
        for (size_t i = 0; i < got; i++) {
            if (buf[i] != '\n') continue;
            if (start > 0) out_str(",");
            out_json_string(buf + start, i - start);
            start = i + 1;
        }
        out_str("]}");
    }
    free(buf);
}

static void step(uint64_t h, const jval *s) {
    const jval *a;
    uint64_t worker;
    if ((a = json_get(s, "apply")) != NULL) {
        const jval *ev = json_get(a, "event");
        if (!u64(json_get(a, "worker_id"), &worker) || ev == NULL || ev->type != J_STRING)
            out_str("{\"error\":\"invalid_argument\",\"message\":\"bad apply step\"}");
        else
            step_status(kvhash_index_apply_json(h, worker, ev->text, ev->len));
    } else if ((a = json_get(s, "find_matches")) != NULL) {
        step_find_matches(h, a);
    } else if ((a = json_get(s, "remove_worker")) != NULL && u64(json_get(a, "worker_id"), &worker)) {
        step_status(kvhash_index_remove_worker(h, worker));
    } else if ((a = json_get(s, "clear_all_blocks")) != NULL && u64(json_get(a, "worker_id"), &worker)) {
        step_status(kvhash_index_clear_all_blocks(h, worker));
    } else if (json_get(s, "stats") != NULL) {
        step_stats(h);
    } else if (json_get(s, "dump") != NULL) {
        step_dump(h);
    } else {
        out_str("{\"error\":\"invalid_argument\",\"message\":\"step has no known operation\"}");
    }
}

static const char *op_index(const jval *req) {
    const jval *mode = json_get(req, "mode"), *steps = json_get(req, "steps");
    if (mode == NULL || mode->type != J_STRING || steps == NULL || steps->type != J_ARRAY)
        return fail("index needs mode and steps");
    int32_t m = strcmp(mode->text, "warn") == 0 ? KVHASH_MODE_WARN
              : strcmp(mode->text, "enforce") == 0 ? KVHASH_MODE_ENFORCE : -1;
    if (m < 0) return fail("mode must be warn or enforce");
    uint64_t h;
    int32_t st = kvhash_index_new(m, &h);
    if (st != KVHASH_OK) return lib_error("kvhash_index_new", st);
    out_str("\"results\":[");
    for (size_t i = 0; i < steps->n; i++) {
        if (i) out_str(",");
        step(h, &steps->items[i]);
    }
    out_str("]");
    kvhash_index_free(h);
    return NULL;
}

static void answer(const char *line, size_t len) {
    jval req;
    const char *e = json_parse(line, len, &req);
    const jval *id = json_get(&req, "id"), *op = json_get(&req, "op");
    out_reset();
    out_str("{\"id\":");
    if (e == NULL && id != NULL && id->type == J_NUMBER) out_raw(id->text, id->len);
    else out_str("0");
    if (e != NULL) {
        e = fail(e);
    } else if (op == NULL || op->type != J_STRING) {
        e = fail("request has no op");
    } else {
        out_str(",");
        if (strcmp(op->text, "hello") == 0) e = op_hello();
        else if (strcmp(op->text, "block_hashes") == 0) e = op_block_hashes(&req);
        else if (strcmp(op->text, "sequence_hashes") == 0) e = op_sequence_hashes(&req);
        else if (strcmp(op->text, "seed") == 0) e = op_seed(&req);
        else if (strcmp(op->text, "chain_step") == 0) e = op_chain_step(&req);
        else if (strcmp(op->text, "raw_hash") == 0) e = op_raw_hash(&req);
        else if (strcmp(op->text, "index") == 0) e = op_index(&req);
        else e = fail("unknown op");
    }
    if (e != NULL) { /* start over: an error answer carries only the id and the message */
        out_reset();
        out_str("{\"id\":");
        if (id != NULL && id->type == J_NUMBER) out_raw(id->text, id->len);
        else out_str("0");
        out_str(",\"error\":");
        out_json_string(e, strlen(e));
    }
    out_str("}");
    out_flush_line();
    json_free();
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n') n--;
        answer(line, (size_t)n);
    }
    free(line);
    return 0;
}

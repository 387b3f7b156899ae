#include "json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Every allocation of a parse is kept on one list and freed at once:
 * a testee parses one request, answers it and starts over. */
typedef struct block { struct block *next; } block;
static block *blocks;

static void *alloc(size_t n) {
    block *b = malloc(sizeof(block) + n);
    if (b == NULL) abort();
    b->next = blocks;
    blocks = b;
    return b + 1;
}

void json_free(void) {
    while (blocks != NULL) {
        block *next = blocks->next;
        free(blocks);
        blocks = next;
    }
}

typedef struct { const char *p, *end; int depth; } parser;

static void ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static const char *value(parser *ps, jval *out);

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *dst, unsigned cp) {
    if (cp < 0x80) { dst[0] = (char)cp; return 1; }
    if (cp < 0x800) { dst[0] = (char)(0xC0 | (cp >> 6)); dst[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12)); dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18)); dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); dst[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* string decodes a JSON string; escapes never make the text longer, so
 * the raw length bounds the decoded one. */
static const char *string(parser *ps, jval *out) {
    ps->p++; /* opening quote */
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p != '"') ps->p += (*ps->p == '\\') ? 2 : 1;
    if (ps->p >= ps->end) return "unterminated string";
    char *dst = alloc((size_t)(ps->p - start) + 1);
    size_t n = 0;
    for (const char *s = start; s < ps->p;) {
        if (*s != '\\') { dst[n++] = *s++; continue; }
        s++;
        switch (*s++) {
        case '"': dst[n++] = '"'; break;
        case '\\': dst[n++] = '\\'; break;
        case '/': dst[n++] = '/'; break;
        case 'b': dst[n++] = '\b'; break;
        case 'f': dst[n++] = '\f'; break;
        case 'n': dst[n++] = '\n'; break;
        case 'r': dst[n++] = '\r'; break;
        case 't': dst[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (ps->p - s < 4 || !hex4(s, &cp)) return "bad \\u escape";
            s += 4;
            if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
                if (ps->p - s < 6 || s[0] != '\\' || s[1] != 'u' || !hex4(s + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return "unpaired surrogate";
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                s += 6;
            }
            n += put_utf8(dst + n, cp);
            break;
        }
        default: return "bad escape";
        }
    }
    dst[n] = 0;
    ps->p++; /* closing quote */
    out->type = J_STRING;
    out->text = dst;
    out->len = n;
    return NULL;
}

/* Arrays and objects grow by doubling into fresh arena blocks. */
static const char *container(parser *ps, jval *out, int object) {
    char close = object ? '}' : ']';
    size_t cap = 8, n = 0;
    jval *items = alloc(cap * sizeof(jval)), *keys = object ? alloc(cap * sizeof(jval)) : NULL;
    if (++ps->depth > 64) return "too deeply nested";
    ps->p++;
    ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
    } else {
        for (;;) {
            if (n == cap) {
                jval *ni = alloc(2 * cap * sizeof(jval));
                memcpy(ni, items, cap * sizeof(jval));
                items = ni;
                if (object) {
                    jval *nk = alloc(2 * cap * sizeof(jval));
                    memcpy(nk, keys, cap * sizeof(jval));
                    keys = nk;
                }
                cap *= 2;
            }
            const char *err;
            if (object) {
                ws(ps);
                if (ps->p >= ps->end || *ps->p != '"') return "expected a key";
                if ((err = string(ps, &keys[n])) != NULL) return err;
                ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') return "expected ':'";
                ps->p++;
            }
            if ((err = value(ps, &items[n])) != NULL) return err;
            n++;
            ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
            if (ps->p < ps->end && *ps->p == close) { ps->p++; break; }
            return object ? "expected ',' or '}'" : "expected ',' or ']'";
        }
    }
    ps->depth--;
    out->type = object ? J_OBJECT : J_ARRAY;
    out->items = items;
    out->keys = keys;
    out->n = n;
    return NULL;
}

static const char *value(parser *ps, jval *out) {
    memset(out, 0, sizeof *out);
    ws(ps);
    if (ps->p >= ps->end) return "unexpected end";
    char c = *ps->p;
    if (c == '"') return string(ps, out);
    if (c == '[' || c == '{') return container(ps, out, c == '{');
    static const struct { const char *word; jtype type; } words[] = {
        {"null", J_NULL}, {"true", J_TRUE}, {"false", J_FALSE}};
    for (size_t i = 0; i < 3; i++) {
        size_t wl = strlen(words[i].word);
        if ((size_t)(ps->end - ps->p) >= wl && memcmp(ps->p, words[i].word, wl) == 0) {
            ps->p += wl;
            out->type = words[i].type;
            return NULL;
        }
    }
    const char *start = ps->p;
    while (ps->p < ps->end && strchr("+-0123456789.eE", *ps->p) != NULL) ps->p++;
    if (ps->p == start) return "unexpected character";
    out->type = J_NUMBER;
    out->text = start;
    out->len = (size_t)(ps->p - start);
    return NULL;
}

const char *json_parse(const char *s, size_t len, jval *out) {
    parser ps = {s, s + len, 0};
    const char *err = value(&ps, out);
    if (err != NULL) return err;
    ws(&ps);
    return ps.p == ps.end ? NULL : "trailing characters";
}

const jval *json_get(const jval *obj, const char *key) {
    if (obj == NULL || obj->type != J_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i].len == kl && memcmp(obj->keys[i].text, key, kl) == 0) return &obj->items[i];
    return NULL;
}

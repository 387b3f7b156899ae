#include "out.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *buf;
static size_t len, cap;

void out_reset(void) { len = 0; }

void out_raw(const char *s, size_t n) {
    if (len + n > cap) {
        cap = (len + n) * 2 + 1024;
        buf = realloc(buf, cap);
        if (buf == NULL) abort();
    }
    memcpy(buf + len, s, n);
    len += n;
}

void out_str(const char *s) { out_raw(s, strlen(s)); }

void out_json_string(const char *s, size_t n) {
    out_raw("\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\'; esc[1] = (char)c;
            out_raw(esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            out_raw(esc, 6);
        } else {
            out_raw((const char *)&s[i], 1);
        }
    }
    out_raw("\"", 1);
}

void out_u64(uint64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "\"%" PRIu64 "\"", v);
    out_raw(tmp, (size_t)n);
}

void out_uint(uint64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    out_raw(tmp, (size_t)n);
}

void out_flush_line(void) {
    out_raw("\n", 1);
    if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) exit(1);
}

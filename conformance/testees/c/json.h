/* A minimal JSON reader for the testee protocol: it parses one request
 * line into a tree. Numbers are kept as text (the protocol's u64 values are
 * strings; token ids and block sizes are integers the caller converts), so
 * no floating point is involved. Not a general-purpose library. */
#ifndef KVHASH_TESTEE_JSON_H
#define KVHASH_TESTEE_JSON_H

#include <stddef.h>

typedef enum { J_NULL, J_FALSE, J_TRUE, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } jtype;

typedef struct jval {
    jtype type;
    const char *text; /* J_NUMBER: the number's text; J_STRING: decoded UTF-8 */
    size_t len;       /* bytes of text (a string may hold NUL bytes) */
    struct jval *items; /* J_ARRAY: elements; J_OBJECT: values */
    struct jval *keys;  /* J_OBJECT: keys (J_STRING), parallel to items */
    size_t n;
} jval;

/* json_parse parses s[0..len) into *out; every allocation goes to a list
 * freed by json_free. Returns NULL on success, else a static message. */
const char *json_parse(const char *s, size_t len, jval *out);
void json_free(void);

/* json_get returns the value of key in an object, or NULL. */
const jval *json_get(const jval *obj, const char *key);

#endif

/* The answer being written: a growable buffer with the few JSON writers
 * the protocol needs. */
#ifndef KVHASH_TESTEE_OUT_H
#define KVHASH_TESTEE_OUT_H

#include <stddef.h>
#include <stdint.h>

void out_reset(void);
void out_raw(const char *s, size_t n);
void out_str(const char *s);                 /* a literal, copied as is */
void out_json_string(const char *s, size_t n); /* quoted and escaped */
void out_u64(uint64_t v);                    /* as a decimal string */
void out_uint(uint64_t v);                   /* as a JSON number */
void out_flush_line(void);                   /* writes the answer and a newline to stdout */

#endif

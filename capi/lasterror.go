package main

/*
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// The last error of this OS thread. cgo exports run on the caller's thread,
// so Go writes here inside the failing call and the caller reads it after.
//
// Only a pointer and a length are thread-local: Go's runtime makes the
// library's whole TLS block "static TLS", and a process that dlopen()s the
// library (Python's ctypes, ...) has only a few hundred spare bytes of it,
// so the message itself lives in a heap buffer made on the thread's first
// error and freed when the thread exits. Longer messages are stored cut.
#define KVHASH_ERR_BUF 4096
static _Thread_local char *kvhash_err_msg;
static _Thread_local size_t kvhash_err_len;
static pthread_key_t kvhash_err_key;
static pthread_once_t kvhash_err_once = PTHREAD_ONCE_INIT;

static void kvhash_err_make_key(void) {
	pthread_key_create(&kvhash_err_key, free);
}

static void kvhash_set_error(const char *msg, size_t n) {
	if (kvhash_err_msg == NULL) {
		pthread_once(&kvhash_err_once, kvhash_err_make_key);
		char *buf = malloc(KVHASH_ERR_BUF);
		if (buf == NULL) { // No memory for the message: the status still says it.
			kvhash_err_len = 0;
			return;
		}
		pthread_setspecific(kvhash_err_key, buf);
		kvhash_err_msg = buf;
	}
	if (n > KVHASH_ERR_BUF - 1) n = KVHASH_ERR_BUF - 1;
	memcpy(kvhash_err_msg, msg, n);
	kvhash_err_msg[n] = 0;
	kvhash_err_len = n;
}

static size_t kvhash_copy_error(char *buf, size_t cap) {
	if (buf != NULL && cap > 0) {
		size_t n = kvhash_err_len < cap - 1 ? kvhash_err_len : cap - 1;
		// A cut copy must not end inside a UTF-8 character.
		if (n < kvhash_err_len)
			while (n > 0 && (kvhash_err_msg[n] & 0xC0) == 0x80) n--;
		if (n > 0) memcpy(buf, kvhash_err_msg, n);
		buf[n] = 0;
	}
	return kvhash_err_len;
}
*/
import "C"

import (
	"unsafe"

	"github.com/kvhash/kvhash/internal/abi"
)

// errBufCap is what KVHASH_ERR_BUF holds besides the NUL: the longest
// message (abi.MaxMessageLen; a test checks they agree).
const errBufCap = C.KVHASH_ERR_BUF - 1

// setLastError stores msg (at most abi.MaxMessageLen bytes, as
// abi.Message makes it) as this thread's last error. The C side copies it,
// so no Go memory is kept by C.
func setLastError(msg string) {
	msg = abi.TruncateUTF8(msg, errBufCap)
	C.kvhash_set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
}

// copyLastError is kvhash_last_error.
func copyLastError(buf *C.char, capacity C.size_t) C.size_t {
	return C.kvhash_copy_error(buf, capacity)
}

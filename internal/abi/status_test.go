package abi

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// The codes are the ABI: C and WASM callers compare against literals.
func TestStatusValuesAreFixed(t *testing.T) {
	want := map[Status]int32{
		StatusOK: 0, StatusInvalidArgument: -1, StatusBufferTooSmall: -2, StatusUnknownHandle: -3,
		StatusDecode: -4, StatusRejected: -5, StatusInternal: -6, StatusOutOfBounds: -7, StatusNoMemory: -8,
	}
	for s, v := range want {
		assert.Equal(t, v, int32(s), s.String())
	}
	assert.Equal(t, StatusNoMemory, MinStatus)
}

func TestStatusString(t *testing.T) {
	tests := []struct {
		s    Status
		want string
	}{
		{StatusOK, "KVHASH_OK"},
		{StatusInvalidArgument, "KVHASH_ERR_INVALID_ARGUMENT"},
		{StatusBufferTooSmall, "KVHASH_ERR_BUFFER_TOO_SMALL"},
		{StatusUnknownHandle, "KVHASH_ERR_UNKNOWN_HANDLE"},
		{StatusDecode, "KVHASH_ERR_DECODE"},
		{StatusRejected, "KVHASH_ERR_REJECTED"},
		{StatusInternal, "KVHASH_ERR_INTERNAL"},
		{StatusOutOfBounds, "KVHASH_ERR_OUT_OF_BOUNDS"},
		{StatusNoMemory, "KVHASH_ERR_NO_MEMORY"},
		{Status(1), "Status(1)"},
		{Status(-9), "Status(-9)"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.s.String())
	}
}

func TestStatusOf(t *testing.T) {
	stability := func(kind core.Violation, enforced bool) error {
		return &core.StabilityError{Kind: kind, Worker: core.Worker{ID: 1}, EventID: 2, Hash: 3, Enforced: enforced}
	}
	tests := []struct {
		name string
		err  error
		want Status
	}{
		{"nil", nil, StatusOK},
		{"core invalid argument", fmt.Errorf("%w: block size is 0", core.ErrInvalidArgument), StatusInvalidArgument},
		{"abi invalid argument", invalidf("x is NULL"), StatusInvalidArgument},
		{"buffer too small", tooSmall("out", 1, 2), StatusBufferTooSmall},
		{"unknown handle", unknownHandle(7), StatusUnknownHandle},
		{"decode", fmt.Errorf("%w: field event_id", core.ErrDecode), StatusDecode},
		{"rejected", fmt.Errorf("wrapped: %w", core.ErrEventRejected), StatusRejected},
		{"parent not found", stability(core.ViolationParentNotFound, false), StatusRejected},
		{"enforced mismatch", stability(core.ViolationHashMismatch, true), StatusRejected},
		{"joined violations", errors.Join(stability(core.ViolationBlockNotFound, false), stability(core.ViolationBlockNotFound, false)), StatusRejected},
		{"out of bounds", fmt.Errorf("%w: ptr", ErrOutOfBounds), StatusOutOfBounds},
		{"no memory", fmt.Errorf("%w: 5 GiB", ErrNoMemory), StatusNoMemory},
		{"no memory beats out of bounds", errors.Join(ErrOutOfBounds, ErrNoMemory), StatusNoMemory},
		{"recovered panic", Recovered("boom"), StatusInternal},
		{"unknown error is a bug", errors.New("surprise"), StatusInternal},
		// The most specific cause wins over a general one.
		{"decode beats invalid", errors.Join(core.ErrInvalidArgument, core.ErrDecode), StatusDecode},
		{"internal beats all", errors.Join(core.ErrInvalidArgument, ErrInternal), StatusInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, StatusOf(tt.err))
		})
	}
}

func TestMessage(t *testing.T) {
	assert.Empty(t, Message(nil))
	assert.Equal(t, "invalid argument: tokens is NULL but its length is 3", Message(NullInput("tokens", 3)))
	long := Message(invalidf("%s", strings.Repeat("é", 3000)))
	assert.LessOrEqual(t, len(long), MaxMessageLen)
	assert.Greater(t, len(long), MaxMessageLen-2)
	assert.True(t, utf8.ValidString(long))
}

func TestRecovered(t *testing.T) {
	// The pattern every export uses: a deferred function that calls
	// recover() itself and reports Recovered.
	call := func(fn func()) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = Recovered(v)
			}
		}()
		fn()
		return nil
	}
	tests := []struct {
		name string
		fn   func()
		msg  string
	}{
		{"string", func() { panic("boom") }, "boom"},
		{"error", func() { panic(errors.New("bad state")) }, "bad state"},
		{"runtime error", func() {
			var s []int
			_ = s[len(s)+1]
		}, "index out of range"},
		{"nil map", func() {
			var m map[int]int
			m[1] = 1
		}, "nil map"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := call(tt.fn)
			require.Error(t, err)
			assert.Equal(t, StatusInternal, StatusOf(err))
			assert.Contains(t, err.Error(), tt.msg)
			assert.Contains(t, err.Error(), "recovered panic")
		})
	}
	assert.NoError(t, call(func() {}))
}

package ingest

import (
	"errors"
	"fmt"
	"strconv"
)

// MalformedReason says why a message was not delivered; each reason is one
// counter in Stats (and one label value of the service's metric).
type MalformedReason uint8

// Why a message (or one event of it) was skipped.
const (
	// ReasonFrames: not 3 frames (topic, seq, payload).
	ReasonFrames MalformedReason = iota
	// ReasonSeq: the seq frame is not 8 bytes.
	ReasonSeq
	// ReasonMsgpack: the payload is not MessagePack (truncated, bad code,
	// trailing bytes).
	ReasonMsgpack
	// ReasonWrongType: valid MessagePack of the wrong shape (a string where
	// a list belongs, a batch of 1 element, a required field missing).
	ReasonWrongType
	// ReasonUnknownTag: an event whose tag is none of the known kinds.
	ReasonUnknownTag
	// ReasonTokenRange: a token id that does not fit in u32.
	ReasonTokenRange
	// ReasonPanic: decoding panicked (a bug); recovered, never fatal.
	ReasonPanic
	// ReasonUnknownTopic: a message on the bound endpoint whose topic the
	// Resolver does not know.
	ReasonUnknownTopic

	numReasons
)

var reasonNames = [numReasons]string{
	ReasonFrames:       "frames",
	ReasonSeq:          "seq",
	ReasonMsgpack:      "msgpack",
	ReasonWrongType:    "wrong_type",
	ReasonUnknownTag:   "unknown_tag",
	ReasonTokenRange:   "token_range",
	ReasonPanic:        "panic",
	ReasonUnknownTopic: "unknown_topic",
}

func (r MalformedReason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// MalformedReasons lists every reason, in counter order (for metrics).
func MalformedReasons() []MalformedReason {
	out := make([]MalformedReason, numReasons)
	for i := range out {
		out[i] = MalformedReason(i)
	}
	return out
}

// DecodeError is a message that could not be decoded: why (Reason) and
// where ("event 3: BlockStored.token_ids[5]: ..."). StreamMalformed events
// carry one as their Err.
type DecodeError struct {
	Reason MalformedReason
	Where  string // "" = the message as a whole
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Where == "" {
		return e.Reason.String() + ": " + e.Err.Error()
	}
	return e.Where + ": " + e.Err.Error()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ReasonOf returns the reason of a DecodeError anywhere in err's chain;
// ReasonMsgpack for any other error.
func ReasonOf(err error) MalformedReason {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return ReasonMsgpack
}

// fieldError is an error inside the payload before its location is known:
// each decoding level prefixes its part of the path on the way out.
type fieldError struct {
	reason MalformedReason
	path   string
	err    error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }

func wrongType(format string, args ...any) error {
	return &fieldError{reason: ReasonWrongType, err: fmt.Errorf(format, args...)}
}

// at prefixes err's path with p ("token_ids" + "[5]" -> "token_ids[5]").
// The reason of a plain error (a MessagePack read error) is ReasonMsgpack.
func at(p string, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		switch {
		case fe.path == "":
			fe.path = p
		case fe.path[0] == '[' || fe.path[0] == '.':
			fe.path = p + fe.path
		default:
			fe.path = p + "." + fe.path
		}
		return fe
	}
	return &fieldError{reason: ReasonMsgpack, path: p, err: err}
}

// atEvent prefixes err's path with the event's index: "event 3: " then
// the field ("BlockStored.token_ids[5]").
func atEvent(i int, err error) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		fe = &fieldError{reason: ReasonMsgpack, err: err}
	}
	fe.path = "event " + strconv.Itoa(i) + ": " + fe.path
	return fe
}

// toDecodeError turns a fieldError (or a raw read error) into the exported
// DecodeError with its full location.
func toDecodeError(err error) *DecodeError {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &DecodeError{Reason: fe.reason, Where: fe.path, Err: fe.err}
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return de
	}
	return &DecodeError{Reason: ReasonMsgpack, Err: err}
}

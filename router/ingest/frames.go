package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// seqLen is the size of the seq frame: a big-endian u64.
const seqLen = 8

// endMarker is the seq of the replay's last reply: -1 as 8 bytes.
var endMarker = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// liveMessage is one message of the PUB stream: [topic, seq, payload].
type liveMessage struct {
	topic   string
	seq     uint64
	payload []byte
}

func parseLive(frames [][]byte) (liveMessage, error) {
	if len(frames) != 3 {
		return liveMessage{}, &DecodeError{Reason: ReasonFrames,
			Err: fmt.Errorf("%d frames, want 3 (topic, seq, payload)", len(frames))}
	}
	if len(frames[1]) != seqLen {
		return liveMessage{}, &DecodeError{Reason: ReasonSeq,
			Err: fmt.Errorf("seq frame of %d bytes, want %d", len(frames[1]), seqLen)}
	}
	return liveMessage{
		topic:   string(frames[0]),
		seq:     binary.BigEndian.Uint64(frames[1]),
		payload: frames[2],
	}, nil
}

// replayReply is one reply of the replay endpoint to a DEALER. Two shapes
// exist, told apart by frame count: vLLM >= 0.26 sends ["", topic, seq,
// payload] and ends with ["", "", 0xFF x 8, ""]; SGLang and older vLLM
// send ["", seq, payload] and end with ["", 0xFF x 8, ""].
type replayReply struct {
	topic   string // "" in the 3-frame shape
	seq     uint64
	payload []byte
	end     bool
}

func parseReplayReply(frames [][]byte) (replayReply, error) {
	var r replayReply
	var seq []byte
	switch len(frames) {
	case 3:
		seq, r.payload = frames[1], frames[2]
	case 4:
		r.topic, seq, r.payload = string(frames[1]), frames[2], frames[3]
	default:
		return r, &DecodeError{Reason: ReasonFrames,
			Err: fmt.Errorf("replay reply of %d frames, want 3 or 4", len(frames))}
	}
	if len(frames[0]) != 0 {
		return r, &DecodeError{Reason: ReasonFrames, Err: fmt.Errorf("replay reply without the empty delimiter frame")}
	}
	if len(seq) != seqLen {
		return r, &DecodeError{Reason: ReasonSeq,
			Err: fmt.Errorf("replay seq frame of %d bytes, want %d", len(seq), seqLen)}
	}
	if bytes.Equal(seq, endMarker) {
		r.end = true
		return r, nil
	}
	r.seq = binary.BigEndian.Uint64(seq)
	return r, nil
}

func seqBytes(seq uint64) []byte {
	var b [seqLen]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

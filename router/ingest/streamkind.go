package ingest

import "strconv"

func (k StreamEventKind) String() string {
	switch k {
	case StreamConnected:
		return "connected"
	case StreamDisconnected:
		return "disconnected"
	case StreamGapReplayed:
		return "gap_replayed"
	case StreamGapLost:
		return "gap_lost"
	case StreamRestarted:
		return "restarted"
	case StreamMalformed:
		return "malformed"
	}
	return "stream_event(" + strconv.Itoa(int(k)) + ")"
}

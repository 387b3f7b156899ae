package eventplane

import (
	"math"
	"strconv"
	"strings"

	"github.com/kvhash/kvhash/router/ingest"
)

// SubjectToken makes a model name one NATS subject token: every byte
// outside [A-Za-z0-9_-] becomes '_' ('.', '*', '>' and spaces would split
// or wildcard the subject; '/' is common in model names). Two models may
// share a token: the subject only orders and filters, the message itself
// names its model.
func SubjectToken(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// eventSubject is where src's events go: <prefix>.events.<model>.<worker>.<rank>.
func eventSubject(prefix string, src ingest.Source) string {
	return prefix + ".events." + SubjectToken(src.Model) + "." +
		strconv.FormatUint(src.WorkerID, 10) + "." + strconv.FormatUint(uint64(src.DPRank), 10)
}

// batchMsgID is the batch's Nats-Msg-Id: its source and engine seq, and
// the engine's timestamp, so that a restarted engine's seq 0 is a new
// message while a replay of the same batch (same bytes, same timestamp)
// is a duplicate that JetStream drops.
func batchMsgID(src ingest.Source, b *ingest.Batch) string {
	var sb strings.Builder
	sourceID(&sb, src)
	sb.WriteString("|b|")
	sb.WriteString(strconv.FormatUint(b.Seq, 10))
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatUint(math.Float64bits(b.Timestamp), 16))
	return sb.String()
}

// streamMsgID is a lost gap's or restart's Nats-Msg-Id: two holders that
// report the same gap publish it once. after is the last seq the
// publisher sent for the source.
func streamMsgID(src ingest.Source, ev ingest.StreamEvent, after uint64) string {
	var sb strings.Builder
	sourceID(&sb, src)
	sb.WriteString("|s|")
	sb.WriteString(strconv.Itoa(int(ev.Kind)))
	for _, n := range []uint64{ev.From, ev.To, after} {
		sb.WriteByte('|')
		sb.WriteString(strconv.FormatUint(n, 10))
	}
	return sb.String()
}

func sourceID(sb *strings.Builder, src ingest.Source) {
	sb.WriteString(src.Model)
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatUint(src.WorkerID, 10))
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatUint(uint64(src.DPRank), 10))
}

// leaseKey is an engine's key in the lease bucket.
func leaseKey(workerID uint64) string { return "worker." + strconv.FormatUint(workerID, 10) }

// rebuildMsgID is a rebuild's restart marker's Nats-Msg-Id: one per rank,
// stream incarnation (epoch) and rebuild (the holder's nonce).
func rebuildMsgID(src ingest.Source, epoch, nonce int64) string {
	var sb strings.Builder
	sourceID(&sb, src)
	sb.WriteString("|rebuild|")
	sb.WriteString(strconv.FormatInt(epoch, 36))
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatInt(nonce, 36))
	return sb.String()
}

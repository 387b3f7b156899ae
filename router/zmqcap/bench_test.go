package zmqcap

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// BenchmarkReceive receives vLLM-shaped messages (topic, 8-byte seq,
// payload) from a real PUB socket over loopback through a capped SUB,
// with the connection read through its buffer and unbuffered (zmq4's own
// reads: a system call per frame header and per body), alternated in
// one run. cpu-us/msg is the process's user+system CPU per message,
// the publisher's included (the same in both). Payloads: a decode step's
// batch (600 B) and a long prompt's (37.5 KiB, 512 blocks).
func BenchmarkReceive(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"payload=600B", 600}, {"payload=37.5KiB", 38400}} {
		for _, buf := range []struct {
			name  string
			bytes int
		}{{"read=buffered", readBuffer}, {"read=unbuffered", 0}} {
			b.Run(size.name+"/"+buf.name, func(b *testing.B) {
				defer func(old int) { readBuffer = old }(readBuffer)
				readBuffer = buf.bytes
				benchReceive(b, size.bytes)
			})
		}
	}
}

func benchReceive(b *testing.B, payload int) {
	sub, ep, _ := boundSub(b, 64<<20)
	pub := ingesttest.NewPublisher(b)
	pub.Dial(ep)
	msg := zmq4.NewMsgFrom([]byte("kv-events"), make([]byte, 8), make([]byte, payload))
	// The subscription reaches the PUB asynchronously: publish until the
	// first message arrives.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() { _, err := sub.Recv(); first <- err }()
	for waiting := true; waiting; {
		require.NoError(b, pub.Sock.Send(msg))
		select {
		case err := <-first:
			require.NoError(b, err)
			waiting = false
		case <-time.After(10 * time.Millisecond):
		}
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := 0; i < b.N && ctx.Err() == nil; i++ {
			if pub.Sock.Send(msg) != nil {
				return
			}
		}
	}()
	cpu0 := processCPU()
	b.SetBytes(int64(payload))
	b.ResetTimer()
	for range b.N {
		if _, err := sub.Recv(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-us/msg")
	<-sent
}

// processCPU is the process's user and system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

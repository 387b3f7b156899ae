package ingest

import (
	"log/slog"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kvhash/kvhash/router/internal/cpugate"
)

// dialLoop keeps one SUB socket connected to a stream's engine. zmq4's
// own reconnect (WithAutomaticReconnect) redials from inside its reader
// and reports nothing; instead each connection gets a fresh socket here:
// a receive error is the connection's end (StreamDisconnected), and the
// loop dials again with a bounded backoff until it connects
// (StreamConnected) or the stream stops.
func (s *Subscriber) dialLoop(st *stream) {
	defer st.wg.Done()
	backoff := s.opts.ReconnectMin
	logger := slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug)
	endpoint, err := s.capped(st.src.Endpoint)
	if err != nil { // New checked the cap: not reached
		st.log.Error("kv event endpoint cannot be dialled", "error", err.Error())
		return
	}
	for st.ctx.Err() == nil {
		ctx, link := s.linked(st.ctx)
		sock := zmq4.NewSub(ctx, zmq4.WithDialerMaxRetries(0),
			zmq4.WithDialerTimeout(max(time.Second, s.opts.ReconnectMax)), zmq4.WithLogger(logger))
		_ = sock.SetOption(zmq4.OptionSubscribe, st.src.Topic) // before Dial: sent on connect
		if err := sock.Dial(endpoint); err != nil {
			_ = sock.Close()
			st.log.Debug("kv event endpoint not reachable; retrying", "error", err.Error(), "backoff", backoff.String())
			if !sleep(st.ctx, backoff) {
				return
			}
			backoff = min(2*backoff, s.opts.ReconnectMax)
			continue
		}
		backoff = s.opts.ReconnectMin
		if st.enqueue(item{kind: itemConnected}, link) != nil {
			_ = sock.Close()
			return
		}
		err := st.receive(sock, link)
		_ = sock.Close()
		if st.ctx.Err() != nil {
			return
		}
		if st.enqueue(item{kind: itemDisconnected, err: err}, link) != nil {
			return
		}
		if !sleep(st.ctx, backoff) {
			return
		}
	}
}

// receive queues each message until the connection fails; link is the
// socket's (nil without a gate).
func (st *stream) receive(sock zmq4.Socket, link *cpugate.Link) error {
	for {
		msg, err := sock.Recv()
		if err != nil {
			return err
		}
		if st.enqueue(item{kind: itemMessage, frames: msg.Frames}, link) != nil {
			return nil
		}
	}
}

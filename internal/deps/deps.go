// Package deps pins the router's dependencies in go.mod while the packages
// that use them are written. Remove once every one is imported for real.
package deps

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/go-zeromq/zmq4"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/vmihailenco/msgpack/v5"
	_ "go.yaml.in/yaml/v3"
)

// Package enginetest gives kvhash's tests the engines they subscribe to:
// the Python publisher that emits vLLM's and SGLang's ZeroMQ wire byte for
// byte (router/ingest/testdata/publisher.py), an in-process kvmock engine
// fed fresh prompts, and free loopback ports for them.
//
// It is meant only for tests: every helper takes the test's testing.TB,
// fails the test on any error and cleans up when the test ends. No
// production code imports it. It sits at the module root, not under
// router/internal, because cmd/kvrouter's tests use it too.
package enginetest

// Package httpapi holds what kvrouter's two HTTP APIs (router/serve and
// router/proxy) answer alike: errors as OpenAI's error object,
// {"error":{"message","type","code"}}, the shape every OpenAI client
// parses, and JSON bodies with their status.
//
// Each API keeps its own constructors for the cases it answers; this
// package only owns the wire shape, so the two cannot drift apart.
package httpapi

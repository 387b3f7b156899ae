package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// readBody reads a request body up to limit bytes; above it the answer
// is 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	var body []byte
	var err error
	if n := r.ContentLength; n > 0 && n <= limit {
		// One allocation of the announced size (a body that lies about its
		// length still cannot pass the limit).
		buf := bytes.NewBuffer(make([]byte, 0, n+1))
		_, err = buf.ReadFrom(rd)
		body = buf.Bytes()
	} else {
		body, err = io.ReadAll(rd)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge("body_too_large", "request body is larger than %d bytes", mbe.Limit)
		}
		return nil, badRequest("body_unreadable", "reading the request body: %v", err)
	}
	return body, nil
}

// readBodyInto is readBody appending to buf (a pooled buffer): no
// allocation when buf has room.
func readBodyInto(buf []byte, w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return buf, tooLarge("body_too_large", "request body is larger than %d bytes", mbe.Limit)
			}
			return buf, badRequest("body_unreadable", "reading the request body: %v", err)
		}
	}
}

// decodeStrict decodes one JSON value into v: unknown fields, wrong types
// and trailing data are errors naming the field. Integers go straight into
// their Go type (never through float64), so u64 values above 2^53 are
// exact.
func decodeStrict(body []byte, v any) error {
	return decodeJSON(body, v, true)
}

// decodeLenient is decodeStrict without the unknown-field check: Dynamo's
// indexer ignores unknown fields, and its clients may send some.
func decodeLenient(body []byte, v any) error {
	return decodeJSON(body, v, false)
}

func decodeJSON(body []byte, v any, strict bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("empty_body", "request body is empty; want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("trailing_data", "request body has data after its JSON value")
	}
	return nil
}

// jsonError turns encoding/json's errors into 400s that name the field.
func jsonError(err error) *apiError {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	var ae *apiError
	switch {
	case errors.As(err, &ae): // a field's own decoder (tokenList) said why
		return ae
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			field = "(body)"
		}
		return badRequest("invalid_type", "field %s: %s does not fit %s", field, ute.Value, ute.Type)
	case errors.As(err, &se):
		return badRequest("invalid_json", "malformed JSON at byte %d: %v", se.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("invalid_json", "malformed JSON: the body ends in the middle of a value")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return badRequest("unknown_field", "unknown field %s", name)
	}
	return badRequest("invalid_json", "%s", strings.TrimPrefix(msg, "json: "))
}

// requireFields reports the first missing required field; present says
// whether each was in the body (a pointer field left nil).
func requireFields(fields ...struct {
	name    string
	present bool
}) error {
	for _, f := range fields {
		if !f.present {
			return badRequest("missing_field", "missing required field %s", f.name)
		}
	}
	return nil
}

func field(name string, present bool) struct {
	name    string
	present bool
} {
	return struct {
		name    string
		present bool
	}{name, present}
}

// checkTokens enforces the token-count limit.
func checkTokens(n, limit int) error {
	if n > limit {
		return tooLarge("too_many_tokens", "token_ids has %d tokens; the limit is %d", n, limit)
	}
	return nil
}

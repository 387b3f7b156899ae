package indexer

import (
	"fmt"
	"unicode/utf8"
)

// Label bounds. A worker's model and tenant label every one of its
// metric series and are in every answer that lists it (a 2 MB model name
// made each /metrics scrape 97 MB); its topic is shown with it and, on a
// bound endpoint, holds the model.
const (
	MaxLabelBytes = 256
	MaxTopicBytes = 2 * MaxLabelBytes
)

// CheckLabel reports a label value longer than limit bytes or not valid
// UTF-8, naming the field.
func CheckLabel(field, v string, limit int) error {
	if len(v) > limit {
		return fmt.Errorf("%w: %s is %d bytes long; at most %d", ErrInvalidLabel, field, len(v), limit)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidLabel, field)
	}
	return nil
}

// checkLabels checks the spec's labels (CheckLabel): model, tenant, topic.
func (s WorkerSpec) checkLabels() error {
	for _, f := range []struct {
		name, v string
		limit   int
	}{{"model", s.Model, MaxLabelBytes}, {"tenant", s.Tenant, MaxLabelBytes}, {"topic", s.Topic, MaxTopicBytes}} {
		if err := CheckLabel(f.name, f.v, f.limit); err != nil {
			return err
		}
	}
	return nil
}

// clip shortens a value for a log line (a refused label may be megabytes).
func clip(s string) string {
	const keep = 64
	if len(s) <= keep {
		return s
	}
	return fmt.Sprintf("%.64q... (%d bytes)", s, len(s))
}

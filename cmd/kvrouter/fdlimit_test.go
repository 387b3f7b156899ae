package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// kvrouter runs at its hard descriptor limit, not a low soft one.
func TestFileLimitIsRaisedToTheHardLimit(t *testing.T) {
	soft, hard := fileLimit()
	assert.Positive(t, soft)
	assert.Equal(t, hard, soft)
}

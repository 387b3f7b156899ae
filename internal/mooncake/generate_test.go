package mooncake

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGenerateIsDeterministicAndValid(t *testing.T) {
	opts := GenerateOptions{Requests: 300}
	a, b := Generate(7, opts), Generate(7, opts)
	assert.Equal(t, a, b, "same seed, same trace")
	assert.NotEqual(t, a, Generate(8, opts), "another seed, another trace")
	require.Len(t, a, 300)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, a))
	back, err := Read[float64](&buf)
	require.NoError(t, err, "a generated trace reads back")
	assert.Equal(t, a, back)
	for i := 1; i < len(a); i++ {
		assert.GreaterOrEqual(t, a[i].Timestamp, a[i-1].Timestamp, "arrivals in order")
	}
}

// The chat family shares its system prompt's first id across
// conversations; the tenant family's prefixes are distinct per tenant.
func TestGenerateHasBothFamilies(t *testing.T) {
	reqs := Generate(1, GenerateOptions{Requests: 400, SystemBlocks: 2, Tenants: 8, TenantBlocks: 5})
	firsts := map[uint64]int{}
	for _, q := range reqs {
		firsts[q.HashIDs[0]]++
	}
	assert.Greater(t, firsts[0], 100, "chat requests share the system prompt's first id")
	assert.Len(t, firsts, 9, "one first id for chat, one per tenant")
	chatContexts := map[uint64]bool{}
	for _, q := range reqs {
		if q.HashIDs[0] == 0 && len(q.HashIDs) > 2 {
			chatContexts[q.HashIDs[2]] = true
		}
	}
	assert.Greater(t, len(chatContexts), 10, "many conversations behind one first id")
}

// A family option makes every request of that family: every chat turn
// starts with the shared system prompt (ids 0..SystemBlocks-1); no tenant
// request does.
func TestGenerateOneFamily(t *testing.T) {
	for _, tc := range []struct {
		family     string
		wantSystem bool
	}{
		{FamilyChat, true},
		{FamilyTenants, false},
	} {
		t.Run(tc.family, func(t *testing.T) {
			reqs := Generate(3, GenerateOptions{Requests: 200, SystemBlocks: 2, Tenants: 8, TenantBlocks: 5, Family: tc.family})
			require.Len(t, reqs, 200)
			for i, r := range reqs {
				require.NotEmpty(t, r.HashIDs)
				system := len(r.HashIDs) > 2 && r.HashIDs[0] == 0 && r.HashIDs[1] == 1
				assert.Equal(t, tc.wantSystem, system, "request %d: %v", i, r.HashIDs)
			}
		})
	}
}

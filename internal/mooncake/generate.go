package mooncake

import (
	"math/rand/v2"
	"slices"
)

// GenerateOptions shape a generated trace. Zero fields take the defaults
// of DefaultGenerateOptions.
type GenerateOptions struct {
	// Requests: how many lines.
	Requests int
	// RatePerSec: mean Poisson arrival rate.
	RatePerSec float64
	// ChatShare: the share of requests from the chat family (one system
	// prompt shared by every conversation, multi-turn); the rest come from
	// the tenant family (many tenants, each a distinct long prefix).
	ChatShare float64
	// SystemBlocks: the chat system prompt's length in hash ids.
	SystemBlocks int
	// Tenants, TenantBlocks: the tenant family's tenants and the length
	// of each one's private prefix in hash ids.
	Tenants, TenantBlocks int
	// MaxOutput: outputs are uniform in 16..MaxOutput tokens.
	MaxOutput int
	// Family, when set, makes every request of one family (FamilyChat or
	// FamilyTenants), whatever ChatShare says.
	Family string
}

// The generated trace's families (GenerateOptions.Family).
const (
	FamilyChat    = "chat"
	FamilyTenants = "tenants"
)

// DefaultGenerateOptions: 4,000 requests at 4 a second, half chat (a
// 4-block system prompt, conversations of up to 24 blocks), half from 200
// tenants with 16-block prefixes (1.6 M tokens of prefixes: more than one
// engine's cache holds, less than a fleet's).
func DefaultGenerateOptions() GenerateOptions {
	return GenerateOptions{Requests: 4000, RatePerSec: 4, ChatShare: 0.5, SystemBlocks: 4, Tenants: 200, TenantBlocks: 16, MaxOutput: 400}
}

func (o GenerateOptions) withDefaults() GenerateOptions {
	d := DefaultGenerateOptions()
	if o.Requests <= 0 {
		o.Requests = d.Requests
	}
	if o.RatePerSec <= 0 {
		o.RatePerSec = d.RatePerSec
	}
	if o.ChatShare <= 0 || o.ChatShare > 1 {
		o.ChatShare = d.ChatShare
	}
	if o.SystemBlocks <= 0 {
		o.SystemBlocks = d.SystemBlocks
	}
	if o.Tenants <= 0 {
		o.Tenants = d.Tenants
	}
	if o.TenantBlocks <= 0 {
		o.TenantBlocks = d.TenantBlocks
	}
	if o.MaxOutput < 16 {
		o.MaxOutput = d.MaxOutput
	}
	return o
}

// maxChatBlocks: a conversation ends once its context reaches this many
// hash ids.
const maxChatBlocks = 24

// Generate makes a Mooncake-format trace of two families, deterministic in
// seed:
//
//   - chat: every conversation starts with the same system prompt (so
//     every chat request shares its first hash id: a request's first id
//     is not its conversation) and each turn extends its own history by
//     one or two blocks;
//   - tenants: each tenant has a distinct long prefix (a document, a tool
//     list) followed by one or two blocks of its own question.
//
// Arrivals are Poisson; timestamps are whole milliseconds from 0.
func Generate(seed uint64, opts GenerateOptions) []Request[float64] {
	o := opts.withDefaults()
	rng := rand.New(rand.NewPCG(seed, seed^0x5851F42D4C957F2D))
	next := uint64(0)
	fresh := func(n int) []uint64 {
		ids := make([]uint64, n)
		for i := range ids {
			ids[i] = next
			next++
		}
		return ids
	}
	system := fresh(o.SystemBlocks)
	tenants := make([][]uint64, o.Tenants)
	for i := range tenants {
		tenants[i] = fresh(o.TenantBlocks)
	}
	var chats [][]uint64
	out := make([]Request[float64], 0, o.Requests)
	t := 0.0
	for i := range o.Requests {
		if i > 0 {
			t += rng.ExpFloat64() * 1000 / o.RatePerSec
		}
		var ids []uint64
		chat := rng.Float64() < o.ChatShare
		switch o.Family {
		case FamilyChat:
			chat = true
		case FamilyTenants:
			chat = false
		}
		if chat {
			// A new conversation when few are open, else a next turn.
			k := -1
			if len(chats) >= 16 && rng.Float64() > 0.15 {
				k = rng.IntN(len(chats))
			}
			if k < 0 {
				chats = append(chats, slices.Clone(system))
				k = len(chats) - 1
			}
			chats[k] = append(chats[k], fresh(1+rng.IntN(2))...)
			ids = slices.Clone(chats[k])
			if len(chats[k]) >= maxChatBlocks {
				chats = slices.Delete(chats, k, k+1)
			}
		} else {
			// Tenants' popularity is skewed: the square of a uniform draw
			// favours the low ranks.
			u := rng.Float64()
			tenant := tenants[int(u*u*float64(len(tenants)))]
			ids = append(slices.Clone(tenant), fresh(1+rng.IntN(2))...)
		}
		out = append(out, Request[float64]{
			Timestamp:    float64(int64(t)),
			InputLength:  BlockTokens*(len(ids)-1) + 1 + rng.IntN(BlockTokens),
			OutputLength: 16 + rng.IntN(o.MaxOutput-15),
			HashIDs:      ids,
		})
	}
	return out
}

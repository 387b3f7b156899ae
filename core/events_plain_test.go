package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// blockVariants are spellings of one block: the exact forms the fast
// path reads and near misses the general path must read instead.
var blockVariants = []string{
	`{"block_hash":%s,"tokens_hash":%s}`,
	`{"block_hash":%s,"tokens_hash":%s,"mm_extra_info":null}`,
	`{ "block_hash":%s,"tokens_hash":%s}`,
	`{"block_hash": %s ,"tokens_hash": %s }`,
	`{"tokens_hash":%[2]s,"block_hash":%[1]s}`,
	`{"block_hash":%s,"tokens_hash":%s,"mm_extra_info":{"mm_objects":[]}}`,
	`{"block_hash":%s,"tokens_hash":%s,"x":1}`,
	`{"block_hash":%s,"tokens_hash":%s,"mm_extra_info":nul}`,
	`{"block_hash":%s}`,
	`{"block_hash":%s,"tokens_hash":%s`,
	`{"block_hash":%s,"tokens_hash":%s,"mm_extra_info":null,"block_hash":5}`,
}

// referenceBlocks decodes with encoding/json into exact u64 fields: what
// every spelling above must give when it is valid.
type referenceEvent struct {
	Data struct {
		Stored struct {
			Blocks []struct {
				BlockHash  *uint64          `json:"block_hash"`
				TokensHash *uint64          `json:"tokens_hash"`
				MM         *json.RawMessage `json:"mm_extra_info"`
			} `json:"blocks"`
		} `json:"stored"`
	} `json:"data"`
}

// FuzzDecodeBlocksAgainstEncodingJSON: the fast block path and the
// general one together give encoding/json's numbers for every valid
// spelling, and reject what it rejects or what has a member missing.
func FuzzDecodeBlocksAgainstEncodingJSON(f *testing.F) {
	f.Add(uint64(1400), uint64(14), "", uint8(0), uint8(3))
	f.Add(uint64(18446744073709551615), uint64(0), "", uint8(1), uint8(2))
	f.Add(uint64(1), uint64(2), "01", uint8(2), uint8(1))
	f.Add(uint64(7), uint64(8), "1e3", uint8(4), uint8(5))
	f.Add(uint64(7), uint64(8), "18446744073709551616", uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, x, l uint64, odd string, variant, n uint8) {
		var blocks []string
		for i := range int(n%4) + 1 {
			xs, ls := fmt.Sprint(x+uint64(i)), fmt.Sprint(l)
			if odd != "" && i == 1 {
				ls = odd // a number text the fast path must leave alone
			}
			v := blockVariants[(int(variant)+i)%len(blockVariants)]
			blocks = append(blocks, fmt.Sprintf(v, xs, ls))
		}
		data := []byte(`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[` +
			strings.Join(blocks, ",") + `]}},"dp_rank":0}`)
		ev, err := DecodeEvent(data)
		var ref referenceEvent
		refErr := json.Unmarshal(data, &ref)
		complete := refErr == nil
		for _, b := range ref.Data.Stored.Blocks {
			complete = complete && b.BlockHash != nil && b.TokensHash != nil
			if b.MM != nil && string(*b.MM) != "null" && string(*b.MM) != `{"mm_objects":[]}` {
				complete = false
			}
		}
		if !complete {
			require.Error(t, err, "accepted %s", data)
			return
		}
		require.NoError(t, err, "%s", data)
		require.Len(t, ev.Blocks, len(ref.Data.Stored.Blocks))
		for i, b := range ref.Data.Stored.Blocks {
			require.Equal(t, *b.BlockHash, ev.Blocks[i].BlockHash, "%s", data)
			require.Equal(t, *b.TokensHash, ev.Blocks[i].TokensHash, "%s", data)
			require.Equal(t, b.MM == nil || string(*b.MM) == "null", ev.Blocks[i].MMObjects == nil, "%s", data)
		}
	})
}

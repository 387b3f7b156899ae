package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// U64 is a u64 on the wire: a JSON decimal string, because JSON numbers
// above 2^53 lose precision in JavaScript and in any parser that reads
// numbers as doubles.
type U64 uint64

// MarshalJSON writes the value as a decimal string.
func (v U64) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(v), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a decimal string in [0, 2^64). A bare JSON number is
// refused so that a testee that leaks doubles is caught, not rounded.
func (v *U64) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("u64 must be a decimal string, got %s", data)
	}
	n, err := ParseU64(s)
	if err != nil {
		return err
	}
	*v = U64(n)
	return nil
}

// ParseU64 parses the protocol's u64 form: decimal digits only, no sign,
// no leading zeros (except "0" itself).
func ParseU64(s string) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || s[0] == '+' || s[0] == '-' {
		return 0, fmt.Errorf("u64 %q is not a canonical decimal string", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("u64 %q: %w", s, err)
	}
	return n, nil
}

// U64s converts wire values to plain uint64s.
func U64s(in []U64) []uint64 {
	out := make([]uint64, len(in))
	for i, v := range in {
		out[i] = uint64(v)
	}
	return out
}

// FromU64s converts plain uint64s to wire values; nil stays nil.
func FromU64s(in []uint64) []U64 {
	if in == nil {
		return nil
	}
	out := make([]U64, len(in))
	for i, v := range in {
		out[i] = U64(v)
	}
	return out
}

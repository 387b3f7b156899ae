package main

import (
	"fmt"
	"strconv"
)

// parseDecimal reads a plain decimal integer from 0 to max: ASCII digits
// only, no sign, no base prefix, no underscores and no leading zero (the
// rule of the JSON event decoder). strconv's base-0 parsing, which flag.Int
// uses, reads "016" as octal 14; rejecting leading zeros keeps "016" from
// meaning different things in different places.
func parseDecimal(s string, max uint64) (uint64, error) {
	switch {
	case s == "":
		return 0, fmt.Errorf("empty value, want a decimal integer")
	case s[0] == '-' && len(s) > 1 && s[1] >= '0' && s[1] <= '9':
		return 0, fmt.Errorf("%q is negative", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a decimal integer", s)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%q has a leading zero; write plain decimal", s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > max {
		return 0, fmt.Errorf("%q is above %d", s, max)
	}
	return v, nil
}

// decimalFlag is an int flag read by parseDecimal.
type decimalFlag struct {
	value int
	set   bool
}

func (f *decimalFlag) String() string { return strconv.Itoa(f.value) }

func (f *decimalFlag) Set(s string) error {
	v, err := parseDecimal(s, uint64(maxInt))
	if err != nil {
		return err
	}
	f.value, f.set = int(v), true
	return nil
}

const maxInt = int(^uint(0) >> 1)

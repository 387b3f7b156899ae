package jsonscan

// AppendCompact appends value, a JSON value ValueEnd has checked, as
// encoding/json's Marshal writes a json.RawMessage: whitespace outside
// strings dropped; <, >, & and U+2028, U+2029 escaped as \u003c, \u003e,
// \u0026, \u2028, \u2029 (so the body stays safe inside HTML, as
// json.Marshal's is). Runs of plain bytes are copied whole.
func AppendCompact(dst, value []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(value); i++ {
		switch value[i] {
		case ' ', '\t', '\n', '\r':
			dst = append(dst, value[start:i]...)
			start = i + 1
		case '"':
			// Inside a string only its end, an escape and the bytes to
			// escape stop the scan (not its spaces).
			for i++; i < len(value); i++ {
				c := value[i]
				if !inStringStop[c] {
					continue
				}
				if c == '"' {
					break
				}
				switch c {
				case '\\':
					i++ // the escaped byte, a quote or backslash among them
				case '<', '>', '&':
					dst = append(dst, value[start:i]...)
					dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
					start = i + 1
				case 0xE2:
					if i+2 < len(value) && value[i+1] == 0x80 && value[i+2]&^1 == 0xA8 {
						dst = append(dst, value[start:i]...)
						dst = append(dst, '\\', 'u', '2', '0', '2', hex[value[i+2]&0xF])
						i += 2
						start = i + 1
					}
				}
			}
		}
	}
	return append(dst, value[start:]...)
}

// inStringStop marks the bytes AppendCompact looks at inside a string.
var inStringStop = func() (t [256]bool) {
	for _, c := range []byte("\"\\<>&\xE2") {
		t[c] = true
	}
	return t
}()

package main

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: writing to the controller is
// typing at the terminal the other end is.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	controller, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { controller.Close() })
	fd := int(controller.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0), "unlockpt")
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err, "ptsname")
	terminal, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { terminal.Close() })
	return controller, terminal
}

// With no tokens and a terminal on standard input, kvhash says it reads
// standard input, then reads it (issue 10, item 23).
func TestCLINotesTerminalStdin(t *testing.T) {
	controller, terminal := openPTY(t)
	require.True(t, isTerminal(terminal))
	// Typed before the read: a line, then end-of-file (Ctrl-D).
	_, err := controller.WriteString("1 2 3 4\n\x04")
	require.NoError(t, err)

	var out, errOut bytes.Buffer
	code := run([]string{"hash", "--block-size", "4"}, terminal, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	assert.Equal(t, "kvhash: reading tokens (a JSON array or whitespace-separated integers) from standard input; end with Ctrl-D\n", errOut.String())
	assert.Contains(t, out.String(), `"block_hashes":[14643705804678351452]`)

	// Tokens as arguments: no note, the terminal is not read.
	out.Reset()
	errOut.Reset()
	code = run([]string{"hash", "--block-size", "4", "1", "2", "3", "4"}, terminal, &out, &errOut)
	require.Equal(t, exitOK, code)
	assert.Empty(t, errOut.String())
}

func TestIsTerminalFalseForFilesAndPipes(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(r))
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	assert.False(t, isTerminal(null), "/dev/null is a character device, not a terminal")
}

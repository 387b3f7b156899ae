package indexerbench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// helperProcess is one of the harness's own processes (the query client,
// the floor server): it reads its job on stdin and answers on stdout.
type helperProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startHelper runs argv, its stderr the harness's, as the named helper.
func startHelper(name string, argv []string) (*helperProcess, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &helperProcess{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}, nil
}

// kill ends a helper that failed to start its work.
func (p *helperProcess) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

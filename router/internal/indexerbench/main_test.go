package indexerbench

import (
	"fmt"
	"os"
	"testing"
)

// helperEnv makes the test binary a helper process (the query client)
// instead of running the tests: the process paths are tested with the
// real pipes and process boundary the harness uses.
const helperEnv = "INDEXERBENCH_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "query-client":
		if err := ServeQueryClient(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// queryClientArgv runs this test binary as a query client process.
func queryClientArgv(t *testing.T) []string {
	t.Setenv(helperEnv, "query-client")
	return []string{os.Args[0]}
}

// Command keel-sandbox is the sandbox's helper on its own: keel starts it, beside keel, to set
// up the namespaces of each sandboxed command. It links only the sandbox package, so it starts
// in a fraction of the time keel itself takes; without it, keel re-executes itself instead.
// Nobody runs it by hand.
package main

import (
	"fmt"
	"os"

	"github.com/keel-dev/keel/internal/sandbox"
)

func main() {
	sandbox.Dispatch(os.Args)
	fmt.Fprintln(os.Stderr, "keel-sandbox: the helper of keel's sandbox; keel starts it, nobody else")
	os.Exit(2)
}

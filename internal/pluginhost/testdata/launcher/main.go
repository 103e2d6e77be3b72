// Command launcher is a plugin launcher for the plugin host's tests, as a Barrage binary is one:
// its main calls Launch. It is built without the race detector, which makes each start of a
// race-built binary cost tens of milliseconds of CPU, twice for each sandboxed plugin (the
// launcher, then its second stage): the hostile tests start several hundred plugins. The test
// binary, the launcher of the other tests, runs the same code under the race detector.
package main

import (
	"fmt"
	"os"

	"github.com/barrage-load/barrage/internal/pluginhost"
)

func main() {
	pluginhost.Launch()
	fmt.Fprintln(os.Stderr, "launcher: a plugin host starts this, with a launcher's arguments")
	os.Exit(2)
}

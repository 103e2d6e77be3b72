// Command inject-headers is a Barrage source modifier that adds headers to every request of a
// script, such as a tag naming the environment or the team that runs the test, without
// editing the script. Barrage starts it; it is not run by hand.
package main

import "github.com/barrage-load/barrage/sdk"

func main() {
	sdk.Serve(newPlugin())
}

// Command random-data is a Barrage session element that makes up test data: email addresses,
// UUIDs, numbers and strings of a pattern, fresh for every iteration. Barrage starts it; it is
// not run by hand.
package main

import "github.com/barrage-load/barrage/sdk"

func main() {
	sdk.Serve(newPlugin())
}

// Command hmac-sign is a Barrage URL plugin that signs the requests it is attached to with an
// HMAC of their method, path and body, as APIs that authenticate clients by a shared key
// expect. Barrage starts it; it is not run by hand.
package main

import (
	"os"

	"github.com/barrage-load/barrage/sdk"
)

func main() {
	sdk.Serve(newPlugin(os.Getenv))
}

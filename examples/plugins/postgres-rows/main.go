// Command postgres-rows is a Barrage session element that hands out the rows of a PostgreSQL
// query, each row once, as variables named after the columns. Barrage starts it; it is not run
// by hand.
package main

import (
	"os"

	"github.com/barrage-load/barrage/sdk"
)

func main() {
	sdk.Serve(newPlugin(os.Getenv))
}

package script

import _ "embed"

// JSONSchema is the JSON Schema (draft 2020-12) of the script format, for editors and other
// tools. It checks a script's shape; Parse also checks what a schema cannot say, such as
// variables being defined before they are used.
//
//go:embed schema.json
var JSONSchema []byte

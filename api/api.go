// Package api is Barrage's REST contract: the OpenAPI document, and the server interface, types
// and client that oapi-codegen generates from it.
package api

import _ "embed"

//go:generate go tool -modfile=../tools/go.mod oapi-codegen -config oapi-codegen.yaml openapi.yaml

// Spec is the OpenAPI document, served at /openapi.yaml and used to validate requests.
//
//go:embed openapi.yaml
var Spec []byte

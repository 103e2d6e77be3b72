package sdk

//go:generate go tool -modfile=../tools/buf/go.mod buf generate

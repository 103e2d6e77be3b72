package pluginhost

import "fmt"

// Reason says what went wrong with a plugin.
type Reason string

// The reasons a plugin fails.
const (
	ReasonNotFound      Reason = "binary not found"
	ReasonChecksum      Reason = "checksum mismatch"
	ReasonStdout        Reason = "printed to stdout before the handshake"
	ReasonProtocol      Reason = "protocol mismatch"
	ReasonHandshake     Reason = "bad handshake"
	ReasonTimeout       Reason = "timed out"
	ReasonCrashed       Reason = "crashed"
	ReasonUnavailable   Reason = "unavailable"
	ReasonUnimplemented Reason = "hook not implemented"
	ReasonConfig        Reason = "invalid config"
	ReasonTooLarge      Reason = "call too large"
	ReasonFailed        Reason = "hook failed"
	ReasonGrant         Reason = "network grant refused"
)

// Error is a plugin's failure, naming the plugin.
type Error struct {
	Plugin string // name@version
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("plugin %s: %s", e.Plugin, e.Reason)
	}
	return fmt.Sprintf("plugin %s: %s: %v", e.Plugin, e.Reason, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

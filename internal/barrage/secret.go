package barrage

import (
	"regexp"
	"time"
)

// Secret is one of a user's secrets as anyone may see it: its name and when it was set, never
// its value. Scripts read its value as ${secret.NAME}; an agent is handed it with a shard or a
// job that needs it.
type Secret struct {
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// The bounds of a user's secrets.
const (
	MaxSecrets     = 100
	MaxSecretValue = 4096
)

var secretNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// CheckSecretName refuses a name a secret cannot have: 1 to 64 letters, digits and _, not
// starting with a digit, as ${secret.NAME} reads it.
func CheckSecretName(field, name string) error {
	if !secretNameRe.MatchString(name) {
		return Invalid(field, "1 to 64 letters, digits and _, not starting with a digit")
	}
	return nil
}

package barrage

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Secret is one of a user's secrets as anyone may see it: its name and when it was set, never
// its value. Scripts read its value as ${secret.NAME}; an agent is handed it with a shard or a
// job that needs it.
type Secret struct {
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// The bounds of a user's secrets. A value shorter than MinSecretValue would be masked wherever
// its letters appear, and the gaps would spell it.
const (
	MaxSecrets     = 100
	MinSecretValue = 4
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

// CheckSecretValue refuses a value a secret cannot have: from MinSecretValue to MaxSecretValue
// bytes, without control characters but tab (a line break would end a header it is sent in).
func CheckSecretValue(field, value string) error {
	switch {
	case utf8.RuneCountInString(value) < MinSecretValue:
		return Invalid(field, fmt.Sprintf("at least %d characters: a shorter value would be masked wherever its letters appear, and the gaps would spell it", MinSecretValue))
	case len(value) > MaxSecretValue:
		return Invalid(field, fmt.Sprintf("%d bytes; at most %d", len(value), MaxSecretValue))
	case strings.ContainsFunc(value, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }):
		return Invalid(field, "must not hold control characters but tab: a line break or NUL would break the header or URL it is sent in")
	}
	return nil
}

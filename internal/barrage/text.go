package barrage

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckText is the rule for the text people give things (the names of an account, a token, an
// agent, a test or a script, a plan, a note): s with the spaces at either end trimmed, minLen to
// maxLen characters, and no control characters (PostgreSQL cannot store NUL; the others have no
// business in a name). It returns the trimmed text. api/openapi.yaml states it as the pattern
// of those fields.
func CheckText(field, s string, minLen, maxLen int) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return "", Invalid(field, "must not hold control characters")
	}
	if n := utf8.RuneCountInString(s); n < minLen || n > maxLen {
		return "", Invalid(field, fmt.Sprintf("must have %d to %d characters, spaces at either end not counted", minLen, maxLen))
	}
	return s, nil
}

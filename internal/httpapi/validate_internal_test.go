package httpapi

import (
	"regexp"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The byte format's check is kin-openapi's regular expression, read at byte speed: it accepts
// and refuses exactly what the expression does.
func FuzzCheckBase64IsTheByteFormat(f *testing.F) {
	re := regexp.MustCompile(openapi3.FormatOfStringByte)
	for _, s := range []string{"", "U3dhZ2dlciByb2Nrcw==", "a-b_c", "==", "ab=c", "ab==\n", "é", "abc=", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if want, got := re.MatchString(s), checkBase64(s) == nil; got != want {
			t.Fatalf("checkBase64(%q) accepts: %v; the format's expression: %v", s, got, want)
		}
	})
}

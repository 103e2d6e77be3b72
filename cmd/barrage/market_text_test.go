package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An author's README printed by plugin info can neither retitle, clear nor paint the terminal
// (a byte that is not UTF-8 prints as U+FFFD, which does nothing).
func TestTerminalTextEscapesControlCharacters(t *testing.T) {
	in := "# title\n\tindented \x1b]0;PWNED\a \x1b[31mred\x1b[2J \x1b]8;;https://evil.example\aclick\u009b0m \xff"
	out := terminalText(in)
	require.Equal(t, "# title\n\tindented \\x1b]0;PWNED\\a \\x1b[31mred\\x1b[2J \\x1b]8;;https://evil.example\\aclick\\u009b0m \ufffd", out)
	for _, r := range out {
		require.False(t, r < 0x20 && r != '\n' && r != '\t', "a control character is left: %q", out)
	}
}

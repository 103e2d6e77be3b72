package notifications

import (
	"bufio"
	"context"
	"log/slog"
	"mime"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/seal"
	"github.com/barrage-load/barrage/internal/summary"
)

// smtpServer is an SMTP server on 127.0.0.1 that takes one message and hands over what it got:
// the envelope and the data.
func smtpServer(t *testing.T) (string, <-chan []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	got := make(chan []string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
		say := func(line string) { w.WriteString(line + "\r\n"); w.Flush() }
		say("220 test ESMTP")
		var lines []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\r\n")
			switch cmd := strings.ToUpper(strings.Fields(line + " x")[0]); cmd {
			case "EHLO", "HELO":
				say("250 test")
			case "MAIL", "RCPT":
				lines = append(lines, line)
				say("250 ok")
			case "DATA":
				say("354 go on")
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if l == ".\r\n" {
						break
					}
					lines = append(lines, strings.TrimRight(l, "\r\n"))
				}
				say("250 queued")
			case "QUIT":
				say("221 bye")
				got <- lines
				return
			default:
				say("502 no")
			}
		}
	}()
	return ln.Addr().String(), got
}

// An email channel's message goes through the operator's SMTP server: from its sender to the
// channel's address, its subject encoded (RFC 2047), its body with the run's links and findings.
func TestAnEventIsMailedThroughTheOperatorsServer(t *testing.T) {
	addr, got := smtpServer(t)
	s := New(nil, seal.Ephemeral(), slog.New(slog.DiscardHandler), Config{SMTP: &SMTP{Addr: addr, From: "barrage@example.com"}})
	e := event{ID: uuid.New(), Message: "Run 0197 (checkout) failed: agent one was lost — the figures stop at second 12.",
		Run: &runEvent{URL: "/runs/0197", ReportURL: "/v1/runs/0197/report",
			Insights: []summary.Insight{{Title: "a knee at about 8 VUs", Evidence: "."}}}}
	require.NoError(t, s.mail(context.Background(), "ops@example.com", e))
	var lines []string
	select {
	case lines = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no message")
	}
	require.Equal(t, "MAIL FROM:<barrage@example.com>", lines[0])
	require.Equal(t, "RCPT TO:<ops@example.com>", lines[1])
	msg, err := mail.ReadMessage(strings.NewReader(strings.Join(lines[2:], "\r\n") + "\r\n"))
	require.NoError(t, err)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "[barrage] "+e.Message, subject, "non-ASCII subjects are encoded (RFC 2047)")
	require.NotContains(t, msg.Header.Get("Subject"), "—")
	require.Equal(t, "ops@example.com", msg.Header.Get("To"))
	require.Contains(t, lines, "The run: /runs/0197")
	require.Contains(t, lines, "  - a knee at about 8 VUs: .")
}

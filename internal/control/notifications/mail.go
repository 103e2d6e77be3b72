package notifications

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"strings"
	"time"
)

// mail sends e to the address to through the operator's SMTP server: STARTTLS when the server
// offers it, and a login when one is configured (net/smtp sends a password only over TLS or to
// loopback).
func (s *Service) mail(ctx context.Context, to string, e event) error {
	m := s.cfg.SMTP
	if m == nil {
		return errors.New("this server sends no email: its operator has not set --smtp-addr")
	}
	host, _, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return fmt.Errorf("the SMTP address: %w", err)
	}
	conn, err := (&net.Dialer{Timeout: s.cfg.Timeout}).DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(s.cfg.Timeout))
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return err
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
			return err
		}
	}
	if m.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", m.Username, m.Password, host)); err != nil {
			return err
		}
	}
	if err := c.Mail(m.From); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(mailMessage(m.From, to, s.cfg.Now(), e)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// mailMessage is e as a plain-text message from from to to, its lines ending in LF: the SMTP
// client's writer makes them CRLF and escapes a line that starts with a dot.
func mailMessage(from, to string, at time.Time, e event) []byte {
	oneLine := strings.NewReplacer("\r", " ", "\n", " ")
	subject := []rune("[barrage] " + oneLine.Replace(e.Message))
	if len(subject) > 150 {
		subject = append(subject[:150], '…')
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\nTo: %s\nSubject: %s\nDate: %s\nMessage-ID: <%s@barrage>\n", from, to, mime.QEncoding.Encode("utf-8", string(subject)), at.Format(time.RFC1123Z), e.ID)
	b.WriteString("MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n")
	b.WriteString(e.Message + "\n")
	if r := e.Run; r != nil {
		b.WriteString("\nThe run: " + r.URL + "\nIts report: " + r.ReportURL + "\n")
		if len(r.Insights) > 0 {
			b.WriteString("\nLook at:\n")
			for _, in := range r.Insights {
				b.WriteString("  - " + in.Title + ": " + in.Evidence + "\n")
			}
		}
	}
	return []byte(b.String())
}

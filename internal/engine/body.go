package engine

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/barrage-load/barrage/internal/script"
)

// bodyStream is a request body sent from pieces without joining them: text rendered for the send
// and files' bytes, which the run holds once however many VUs send them. A VU's memory for an
// upload is its rendered text, not the file.
type bodyStream struct {
	segs  [][]byte // the pieces, in order
	files []string // each piece's file name, "" for rendered text
	n     int64    // their total length
	i, at int      // the piece being read, and where in it
}

// set makes the stream send segs, named by files, from their start.
func (b *bodyStream) set(segs [][]byte, files []string) *bodyStream {
	b.segs, b.files, b.n = segs, files, 0
	for _, s := range segs {
		b.n += int64(len(s))
	}
	b.rewind()
	return b
}

// rewind starts the stream over: a redirect that keeps the body sends it again.
func (b *bodyStream) rewind() { b.i, b.at = 0, 0 }

func (b *bodyStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && b.i < len(b.segs) {
		c := copy(p[n:], b.segs[b.i][b.at:])
		n += c
		b.at += c
		if b.at == len(b.segs[b.i]) {
			b.i, b.at = b.i+1, 0
		}
	}
	if n == 0 && b.i >= len(b.segs) {
		return 0, io.EOF
	}
	return n, nil
}

// preview is the body as a trace shows it: the text, and each file as its name and size.
func (b *bodyStream) preview() []byte {
	var out []byte
	for i, s := range b.segs {
		if b.files[i] != "" {
			out = fmt.Appendf(out, "(%d bytes of %s)", len(s), b.files[i])
			continue
		}
		out = append(out, s...)
	}
	return out
}

// newBoundary is a multipart boundary for a run: random, so that no file's bytes hold it.
func newBoundary() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	return "barrage-" + hex.EncodeToString(b[:])
}

// streamBody renders r's file or multipart body into v's buffers and returns its stream and
// Content-Type.
func (v *vu) streamBody(r *compiledRequest) (*bodyStream, string, error) {
	b := r.r.Body
	if b.Kind == script.FileBody {
		v.segs, v.segFiles = append(v.segs[:0], b.File.Data), append(v.segFiles[:0], b.File.Name)
		return v.stream.set(v.segs, v.segFiles), b.ContentType, nil
	}
	// The text is rendered into one buffer and cut into pieces once whole: appending may move it.
	type cut struct {
		from, to int
		file     *script.File
	}
	var cuts []cut
	buf := v.bodyBuf[:0]
	mark := 0
	text := func() {
		cuts = append(cuts, cut{from: mark, to: len(buf)})
		mark = len(buf)
	}
	var err error
	for _, p := range b.Parts {
		buf = append(buf, "--"+r.boundary+"\r\n"...)
		if p.File == nil {
			buf = append(buf, `Content-Disposition: form-data; name="`+p.Name+"\"\r\n\r\n"...)
			if buf, err = p.Value.Render(v.lookup, buf); err != nil {
				return nil, "", err
			}
			buf = append(buf, "\r\n"...)
			continue
		}
		buf = append(buf, `Content-Disposition: form-data; name="`+p.Name+`"; filename="`+p.Filename+"\"\r\n"...)
		buf = append(buf, "Content-Type: "+p.ContentType+"\r\n\r\n"...)
		text()
		cuts = append(cuts, cut{file: p.File})
		buf = append(buf, "\r\n"...)
	}
	buf = append(buf, "--"+r.boundary+"--\r\n"...)
	text()
	v.bodyBuf = buf
	v.segs, v.segFiles = v.segs[:0], v.segFiles[:0]
	for _, c := range cuts {
		if c.file != nil {
			v.segs, v.segFiles = append(v.segs, c.file.Data), append(v.segFiles, c.file.Name)
		} else if c.to > c.from {
			v.segs, v.segFiles = append(v.segs, buf[c.from:c.to]), append(v.segFiles, "")
		}
	}
	return v.stream.set(v.segs, v.segFiles), "multipart/form-data; boundary=" + r.boundary, nil
}

// isStreamed says whether a body is sent as a stream: a file's, or a multipart one.
func isStreamed(b *script.Body) bool {
	return b != nil && (b.Kind == script.FileBody || b.Kind == script.MultipartBody)
}

// fileBodyNotLoaded is the error of a run of a script whose body files Parse, not Load, read.
func fileBodyNotLoaded(r *script.Request) error {
	var names []string
	for _, p := range r.Body.Parts {
		if p.File != nil && p.File.Data == nil {
			names = append(names, p.File.Name)
		}
	}
	if f := r.Body.File; f != nil && f.Data == nil {
		names = append(names, f.Name)
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("request %s: body file %s was not loaded", r.Name, strings.Join(names, ", "))
}

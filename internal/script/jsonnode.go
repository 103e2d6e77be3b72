package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// looksJSON reports whether data is a JSON object or array. Such a document is read with
// encoding/json rather than the YAML parser, which refuses some valid JSON (escaped surrogate
// pairs such as \ud83d\ude00) and would report JSON's mistakes in YAML's words.
func looksJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// jsonNode converts a JSON document into the node tree the YAML parser would give, lines and
// columns included, so one walker reads both.
func jsonNode(data []byte) (*yaml.Node, error) {
	c := &jsonConv{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	c.dec.UseNumber()
	for i, b := range data {
		if b == '\n' {
			c.lineStarts = append(c.lineStarts, i+1)
		}
	}
	n, err := c.value()
	if err != nil {
		return nil, err
	}
	if _, err := c.dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON document")
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Column: 1, Content: []*yaml.Node{n}}, nil
}

type jsonConv struct {
	data       []byte
	dec        *json.Decoder
	lineStarts []int // offsets of the second line on
}

// at returns the line and column of the next token, skipping what separates tokens.
func (c *jsonConv) at() (int, int) {
	off := int(c.dec.InputOffset())
	for off < len(c.data) && strings.IndexByte(" \t\r\n,:", c.data[off]) >= 0 {
		off++
	}
	line := sort.SearchInts(c.lineStarts, off+1)
	start := 0
	if line > 0 {
		start = c.lineStarts[line-1]
	}
	return line + 1, off - start + 1
}

// value converts the next JSON value.
func (c *jsonConv) value() (*yaml.Node, error) {
	line, col := c.at()
	tok, err := c.dec.Token()
	if err != nil {
		return nil, err
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Line: line, Column: col}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.Kind, n.Tag, n.Style = yaml.MappingNode, "!!map", yaml.FlowStyle
			for c.dec.More() {
				kl, kc := c.at()
				k, err := c.dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				v, err := c.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: kl, Column: kc}, v)
			}
		case '[':
			n.Kind, n.Tag, n.Style = yaml.SequenceNode, "!!seq", yaml.FlowStyle
			for c.dec.More() {
				v, err := c.value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
		}
		if _, err := c.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.Tag, n.Value, n.Style = "!!str", t, yaml.DoubleQuotedStyle
	case json.Number:
		n.Tag, n.Value = "!!int", t.String()
		if strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!float"
		}
	case bool:
		n.Tag, n.Value = "!!bool", "false"
		if t {
			n.Value = "true"
		}
	case nil:
		n.Tag, n.Value = "!!null", "null"
	}
	return n, nil
}

package har_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/har"
)

// Whatever HAR Decode accepts converts to a script the parser accepts, or is refused as invalid
// with the field at fault: the converter never writes a script that `barrage run` would refuse.
// Found inputs are kept in testdata/fuzz/FuzzConvert.
func FuzzConvert(f *testing.F) {
	for _, name := range []string{"shop-chrome.har", "shop-record.har"} {
		data, err := os.ReadFile("testdata/" + name)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"log":{"entries":[{"startedDateTime":"2025-01-01T00:00:00Z","request":{"method":"POST","url":"http://a.test/x?a=1&b","postData":{"mimeType":"application/json","text":"{\"a\":[1,{\"b\":\"${x}\"}]}"}},"response":{"status":200,"content":{"mimeType":"application/json","text":"{\"id\":\"abc123\"}"}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := har.Decode(data)
		if err != nil {
			require.ErrorIs(t, err, barrage.ErrInvalid)
			return
		}
		for _, assets := range []bool{false, true} {
			res, err := har.Convert(l, har.Options{Assets: assets})
			if err != nil {
				require.ErrorIs(t, err, barrage.ErrInvalid)
				continue
			}
			require.NotEmpty(t, res.Script)
		}
	})
}

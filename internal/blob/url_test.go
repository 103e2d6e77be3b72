package blob_test

import (
	"fmt"
	"net/url"
	"strings"
)

type s3URL struct{ endpoint, bucket, key, secret string }

// urlParse reads http://KEY:SECRET@HOST:PORT/BUCKET.
func urlParse(s string) (s3URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s3URL{}, fmt.Errorf("BARRAGE_TEST_S3 %q: want http://KEY:SECRET@HOST:PORT/BUCKET", s)
	}
	secret, _ := u.User.Password()
	return s3URL{endpoint: u.Scheme + "://" + u.Host, bucket: strings.Trim(u.Path, "/"), key: u.User.Username(), secret: secret}, nil
}

func hostOf(endpoint string) string {
	u, _ := url.Parse(endpoint)
	return u.Host
}

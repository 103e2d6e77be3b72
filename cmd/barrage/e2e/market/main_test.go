package market_test

import (
	"testing"

	"github.com/barrage-load/barrage/internal/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m) }

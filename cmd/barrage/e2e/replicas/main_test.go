// Package replicas_test runs serve as operators run it for availability: two replicas on one
// PostgreSQL behind a load balancer, agents and watchers reaching them through it, one replica
// killed or both restarted in turn while a run goes on.
package replicas_test

import (
	"testing"

	"github.com/barrage-load/barrage/internal/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m) }

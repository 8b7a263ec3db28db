package configmapwatcher_test

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/testenv"
)

// BenchmarkHTTPTrigger POSTs N triggers (2,000; 200 under SWITCHBOARD_BENCH_SMOKE) over HTTPS
// from 8 concurrent clients, each naming a different Deployment, and measures requests per
// second from the first request to the reconcile of the last one accepted, with how many were
// answered 429 (dropped because the controller's buffer was full). The Deployments do not exist:
// the reconcile of a missing object is the cheapest complete one, so the figure is the
// trigger's and the source's, not the controller's work.
func BenchmarkHTTPTrigger(b *testing.B) {
	n := 2000
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		n = 200
	}
	const clients = 8
	controller := configmapwatcher.Deployments.ControllerName
	post := env.StartManagerWithTrigger(b, configmapwatcher.Group)
	for range b.N {
		before, err := testenv.ReconcileTotal(controller)
		if err != nil {
			b.Fatal(err)
		}
		var accepted, dropped atomic.Int64
		next := make(chan int)
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for i := range next {
					switch code := post(controller, testenv.TriggerToken, testenv.TriggerTarget("trigger-bench", fmt.Sprintf("d-%d-%d", b.N, i))); code {
					case http.StatusAccepted:
						accepted.Add(1)
					case http.StatusTooManyRequests:
						dropped.Add(1)
					default:
						b.Errorf("trigger answered %d", code)
					}
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		testenv.Eventually(b, 5*time.Minute, func() error {
			done, err := testenv.ReconcileTotal(controller)
			if err != nil {
				return err
			}
			if done-before < float64(accepted.Load()) {
				return fmt.Errorf("%v of %d accepted triggers reconciled", done-before, accepted.Load())
			}
			return nil
		})
		elapsed := time.Since(start)
		b.ReportMetric(float64(accepted.Load())/elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(dropped.Load()), "dropped")
	}
}

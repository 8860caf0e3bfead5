package host_test

import (
	"io"
	"sync"
	"testing"
	"time"
)

// TestPHPColdPoolConcurrent: more simultaneous requests than the pool has
// workers, on a pool that is not running yet, are all answered: the pool
// starts once, and the requests beyond its workers wait for a kept
// connection, never for a worker php-fpm will not start.
func TestPHPColdPoolConcurrent(t *testing.T) {
	requirePHPFPM(t)
	s := phpSite(t)
	for round := range 3 {
		c := s.Client("bob.example", false)
		var wg sync.WaitGroup
		start := time.Now()
		errs := make(chan string, 16)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := c.Get("https://bob.example/hello.php")
				if err != nil {
					errs <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "Hello, world!\n" {
					errs <- resp.Status + " " + string(b)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("round %d: %s", round, e)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("round %d: 8 requests on a pool of 2 workers took %v", round, d)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"
)

// `raftka bench connect`: new authenticated connections per second to one
// broker. Each connection is dialed, secured as --command-config says (the
// TLS handshake and the SASL login, SCRAM's key derivation included, which
// is what a secured listener spends on a new client), and closed. Bounded
// by --connections and --duration.
func benchConnectCommand() *cli.Command {
	return &cli.Command{
		Name:  "connect",
		Usage: "open authenticated connections to one broker as fast as allowed and report connections/s",
		Flags: []cli.Flag{
			bootstrapFlag(),
			&cli.IntFlag{Name: "connections", Value: 5000, Usage: "connections to open"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "stop after this long, whatever the count"},
			&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "connections being opened at once"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
		},
		Action: benchConnect,
	}
}

func benchConnect(c *cli.Context) error {
	seeds, err := seedBrokers(c.String("bootstrap-server"))
	if err != nil {
		return err
	}
	addr := seeds[0]
	n, conc, dur := c.Int("connections"), c.Int("concurrency"), c.Duration("duration")
	if n < 1 || conc < 1 || dur <= 0 || dur > maxBenchTime {
		return fmt.Errorf("want --connections >= 1, --concurrency >= 1 and 0 < --duration <= %v", maxBenchTime)
	}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	if path := commandConfigPath(c); path != "" {
		secured, err := commandConfigDialer(path)
		if err != nil {
			return err
		}
		if secured != nil {
			dial = secured
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, dur)
	defer cancel()
	var (
		next, failed atomic.Int64
		mu           sync.Mutex
		times        = make([]time.Duration, 0, n)
		firstErr     error
		wg           sync.WaitGroup
	)
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && next.Add(1) <= int64(n) {
				t0 := time.Now()
				conn, err := dial(ctx, addr)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				took := time.Since(t0)
				_ = conn.Close()
				mu.Lock()
				times = append(times, took)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(times)
	pct := func(p float64) float64 {
		if len(times) == 0 {
			return 0
		}
		return float64(times[min(len(times)-1, int(p*float64(len(times))))].Microseconds()) / 1000
	}
	res := map[string]any{
		"connections":           len(times),
		"errors":                failed.Load(),
		"seconds":               elapsed.Seconds(),
		"connections_per_sec":   float64(len(times)) / elapsed.Seconds(),
		"handshake_p50_ms":      pct(0.5),
		"handshake_p99_ms":      pct(0.99),
		"concurrent_handshakes": conc,
	}
	if len(times) == 0 && firstErr != nil {
		return fmt.Errorf("no connection was opened: %w", firstErr)
	}
	if firstErr != nil {
		logger.Warn().Err(firstErr).Int64("errors", failed.Load()).Msg("some connections failed")
	}
	if c.Bool("json") {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("%d connections in %.1f s: %.0f connections/s, handshake p50 %.2f ms, p99 %.2f ms, %d errors\n",
		len(times), elapsed.Seconds(), res["connections_per_sec"], pct(0.5), pct(0.99), failed.Load())
	return nil
}

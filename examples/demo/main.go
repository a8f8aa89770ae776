// Command demo tells sqskit's whole story in one run, the story of the AWS
// post "Using Amazon SQS dead-letter queues to replay messages": a producer
// sends orders to a FIFO queue and a standard one; consumers with a flaky
// handler fail some for a moment and some for good; SQS moves those that
// keep failing to dead-letter queues; a replayer sends them back with
// growing, jittered delays; and the ones that never succeed reach an
// operator queue with the reason. It prints each event as it happens and
// ends with every order's fate, the delays used, the API calls, and a check
// that nothing was lost (the exit status is 1 if anything was).
//
//	go run ./examples/demo
//
// By default it runs in memory on sqsfake, on simulated time: sqsfake's
// ManualClock moves to the next moment something is due once every consumer
// and replayer waits, so the minutes the story spans pass in a fraction of a
// second, and the same -seed tells the same story, byte for byte (stage.go
// says how). With -endpoint it runs the same story in real time, with short
// delays, against an SQS endpoint:
//
//	go run ./cmd/sqsfake &                                   # or the fauxqs emulator
//	go run ./examples/demo -endpoint http://127.0.0.1:9324
//	go run ./examples/demo -endpoint aws                     # real SQS: AWS_REGION and credentials as usual
//
// It creates its own queues (named sqskit-demo-*) and deletes them at the
// end. SQSKIT_ENDPOINT, or SQSKIT_AWS=1, set the endpoint as for every
// example.
//
// Flags:
//
//	-endpoint URL    an SQS endpoint, or aws; default in memory
//	-n N             orders, 1 to 1000 (default 20)
//	-seed S          picks which orders fail, and the jitter: one seed, one story (default 1)
//	-fifo            only the FIFO queue
//	-standard        only the standard queue
//	-replays R       replays before escalation, 0 to 10 (default 3)
//	-log LEVEL       library log level on stderr: debug, info, warn or error (default error)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sqskit/sqskit/examples/internal/backend"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	endpoint       string
	n              int
	seed           uint64
	fifo, standard bool
	replays        int
}

func parse(args []string, stderr io.Writer) (config, slog.Level, error) {
	var cfg config
	var level slog.Level
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.endpoint, "endpoint", backend.Endpoint(), "an SQS endpoint URL, or aws; default in memory (or $SQSKIT_ENDPOINT, or aws if $SQSKIT_AWS is set)")
	fs.IntVar(&cfg.n, "n", 20, "orders, 1 to 1000")
	fs.Uint64Var(&cfg.seed, "seed", 1, "picks which orders fail, and the jitter: one seed, one story")
	fs.BoolVar(&cfg.fifo, "fifo", false, "only the FIFO queue")
	fs.BoolVar(&cfg.standard, "standard", false, "only the standard queue")
	fs.IntVar(&cfg.replays, "replays", 3, "replays before escalation, 0 to 10")
	fs.TextVar(&level, "log", slog.LevelError, "library log level on stderr: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return cfg, level, err
	}
	switch {
	case fs.NArg() > 0:
		return cfg, level, fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.n < 1 || cfg.n > 1000:
		return cfg, level, fmt.Errorf("-n %d: want 1 to 1000", cfg.n)
	case cfg.replays < 0 || cfg.replays > 10:
		return cfg, level, fmt.Errorf("-replays %d: want 0 to 10", cfg.replays)
	}
	if !cfg.fifo && !cfg.standard {
		cfg.fifo, cfg.standard = true, true
	}
	return cfg, level, nil
}

// timeLimit bounds a run in real time: in memory it takes a few seconds;
// on an endpoint the longest story, ten replays of a minute at most, takes
// under a quarter of an hour.
func timeLimit(cfg config) time.Duration {
	if cfg.endpoint == "" {
		return 2 * time.Minute
	}
	return 15 * time.Minute
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, level, err := parse(args, stderr)
	if err != nil {
		return err
	}
	// The library's own logs: failures it handles are on the timeline, so
	// by default only errors, without a wall-clock time that the
	// simulated timeline would contradict.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	ctx, cancel := context.WithTimeout(ctx, timeLimit(cfg))
	defer cancel()
	s, err := newStory(ctx, cfg, stdout, log)
	if err != nil {
		return err
	}
	return s.run(ctx)
}

// Command keel-otel exports a keel session's telemetry with the OpenTelemetry SDK. keel starts
// it when telemetry is on and writes JSON lines to its stdin (internal/telemetry.Line): the
// configuration, the session, then prompts and events as they happen. It records them as
// Claude Code's metrics, log events and spans (internal/telemetry/otelexport) and exports them
// as the configuration says; when stdin closes it flushes everything and exits.
//
// It is a program of its own so that keel does not link the SDK's exporters: their package
// initialisation (gRPC, protobuf registries, the Prometheus client) would cost every keel
// start several milliseconds, telemetry on or off.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/keel-dev/keel/internal/telemetry"
	"github.com/keel-dev/keel/internal/telemetry/otelexport"
)

// flushTimeout bounds the final export after stdin closed.
const flushTimeout = 10 * time.Second

func main() {
	os.Exit(run(os.Stdin, os.Stderr))
}

func run(in io.Reader, stderr io.Writer) int {
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	if err := export(context.Background(), in, stderr, logger); err != nil {
		logger.Error("keel-otel", "err", err)
		return 1
	}
	return 0
}

func export(ctx context.Context, in io.Reader, console io.Writer, logger *slog.Logger) error {
	r := bufio.NewReaderSize(in, 1<<20)
	first, err := readLine(r)
	if err != nil {
		return fmt.Errorf("read the configuration line: %w", err)
	}
	if first.Config == nil {
		return errors.New("the first line carries no configuration")
	}
	providers, err := otelexport.New(ctx, *first.Config, console, logger)
	if err != nil {
		return err
	}
	rec := otelexport.NewRecorder(*first.Config, providers.Signals())
	last := first.At
	for {
		l, err := readLine(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			logger.Warn("skipping a line", "err", err)
			continue
		}
		last = l.At
		if err := rec.Handle(l); err != nil {
			logger.Warn("skipping a line", "err", err)
		}
	}
	rec.Close(last)
	flush, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	return providers.Shutdown(flush)
}

func readLine(r *bufio.Reader) (telemetry.Line, error) {
	var l telemetry.Line
	b, err := r.ReadBytes('\n')
	if len(b) == 0 && err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("decode line: %w", err)
	}
	return l, nil
}
